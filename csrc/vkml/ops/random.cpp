#include "vkml/ops/random.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/random_push.h"
#include "vkml/shaders/random_sample_push.h"

namespace vkml::ops {

namespace {

using Push = random_detail::Push;

}  // namespace

void random(Device& dev, const TensorRef& out, Distribution dist, Scalar a, Scalar b, uint64_t seed,
            uint64_t offset) {
  VKML_CHECK_ARG(out.is_contiguous(), "random: the output must be contiguous");
  DType dt = out.dtype;
  bool floating = dt == DType::f32 || dt == DType::f16 || dt == DType::bf16 || dt == DType::f64;
  bool integral = dt == DType::i32 || dt == DType::i64 || dt == DType::u8 || dt == DType::b8;
  VKML_CHECK_ARG(shaders::random(dt) != Shader::none && (floating || integral),
                 std::string("random: unsupported dtype ") + dtype_name(dt));
  VKML_CHECK_ARG(dt != DType::f16 || dev.info().supports_fp16,
                 "random: float16 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(dt != DType::f64 || dev.info().supports_fp64,
                 "random: float64 is not supported on " + dev.info().name);
  Push p{};
  switch (dist) {
    case Distribution::Uniform:
    case Distribution::Normal:
      VKML_CHECK_ARG(floating, std::string(dist == Distribution::Uniform ? "uniform" : "normal") +
                                   ": needs a floating-point output, got " + dtype_name(dt));
      p.a = float(a.f);
      p.b = float(b.f);
      std::memcpy(&p.a64, &a.f, sizeof(double));
      std::memcpy(&p.b64, &b.f, sizeof(double));
      break;
    case Distribution::RandInt:
      VKML_CHECK_ARG(b.i > a.i, "random: randint needs from < to");
      p.lo = a.i;
      p.range = uint64_t(b.i) - uint64_t(a.i);
      break;
    case Distribution::Bernoulli:
      VKML_CHECK_ARG(a.f >= 0.0 && a.f <= 1.0, "bernoulli: p must be in [0, 1]");
      p.a = float(a.f);
      break;
  }
  int64_t numel = out.numel();
  if (numel == 0) return;
  check_32bit_indexing(numel, numel, "random");
  p.dst = out.address;
  p.seed_lo = uint32_t(seed);
  p.seed_hi = uint32_t(seed >> 32);
  p.offset_lo = uint32_t(offset);
  p.offset_hi = uint32_t(offset >> 32);
  p.numel = uint32_t(numel);
  VkPipeline pipeline = dev.pipelines().get(shaders::random(dt), {int32_t(dist)});
  Access acc;
  acc.write(span_elems(out.address, numel, itemsize(out.dtype)));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), RANDOM_WG, &acc);
}

size_t sample_operands(Sample kind) {
  switch (kind) {
    case Sample::Binomial:
    case Sample::GammaGrad:
      return 2;
    case Sample::DirichletGrad:
      return 3;
    default:
      return 1;
  }
}

void sample(Device& dev, const TensorRef& out, Sample kind, std::span<const TensorRef> operands,
            uint64_t seed, uint64_t offset) {
  VKML_CHECK_ARG(operands.size() == sample_operands(kind),
                 "sample: wrong number of operands for this kind");
  const int64_t numel = out.numel();
  const DType dt = out.dtype;
  auto fits = [&](const TensorRef& t) {
    return t.dtype == dt && t.is_contiguous() && t.numel() == numel;
  };
  bool all_fit = dt == DType::f32 || dt == DType::f64;
  all_fit = all_fit && fits(out);
  for (const TensorRef& t : operands) all_fit = all_fit && fits(t);
  VKML_CHECK_ARG(all_fit,
                 "sample: operands must be contiguous float32 or float64 tensors of one size");
  VKML_CHECK_ARG(dt != DType::f64 || dev.info().supports_fp64,
                 "sample: float64 needs a device with float64 arithmetic");
  if (numel == 0) return;
  const size_t width = itemsize(dt);
  check_32bit_indexing(numel, numel, "sample");
  random_sample_detail::Push p{};
  // An operand the kind does not take is never read, but a driver may issue a load
  // whose branch is not taken: give it a valid address.
  uint64_t* addresses[] = {&p.a, &p.b, &p.c};
  Access acc;
  for (size_t k = 0; k < 3; ++k) {
    const TensorRef& t = operands[std::min(k, operands.size() - 1)];
    *addresses[k] = t.address;
    if (k < operands.size()) acc.read(span_elems(t.address, numel, width));
  }
  p.dst = out.address;
  p.errors = dev.errors().address();
  p.seed_lo = uint32_t(seed);
  p.seed_hi = uint32_t(seed >> 32);
  p.offset_lo = uint32_t(offset);
  p.offset_hi = uint32_t(offset >> 32);
  p.numel = uint32_t(numel);
  VkPipeline pipeline = dev.pipelines().get(shaders::random_sample(dt), {int32_t(kind)});
  acc.write(span_elems(out.address, numel, width));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), RANDOM_SAMPLE_WG, &acc);
}

}  // namespace vkml::ops
