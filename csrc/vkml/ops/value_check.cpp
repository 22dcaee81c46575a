#include "vkml/ops/value_check.h"

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/device_error.h"
#include "vkml/shaders/value_check_push.h"

namespace vkml::ops {

namespace {

using value_check_detail::Push;

int64_t numel_of(const TensorRef& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.sizes[d];
  return n;
}

void run(Device& dev, const TensorRef& t, Push p) {
  const int64_t n = numel_of(t);
  if (n == 0) return;
  check_32bit_indexing(n, n, "value_check");
  p.data = t.address;
  p.errors = dev.errors().address();
  p.n = uint32_t(n);
  VkPipeline pipeline = dev.pipelines().get(shaders::value_check(t.dtype), {int32_t(kWorkgroup)});
  Access acc;
  acc.read(span_elems(t.address, n, itemsize(t.dtype)));
  // Declared as written, so consecutive checks run in order and the first
  // failure noted is the one the CPU's order of checks would raise.
  acc.write(span_elems(p.errors, 1, DEVICE_ERROR_RECORD_BYTES));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(n), kWorkgroup, &acc);
}

}  // namespace

void check_int_range(Device& dev, const TensorRef& t, int64_t lo, int64_t hi, uint32_t code_below,
                     uint32_t code_above, int64_t bound, uint32_t aux) {
  VKML_CHECK_ARG(t.dtype == DType::i64 || t.dtype == DType::i32,
                 "check_int_range: int32 or int64 values expected");
  Push p{};
  p.lo = lo;
  p.hi = hi;
  p.code_below = code_below;
  p.code_above = code_above;
  p.bound = bound;
  p.aux = aux;
  run(dev, t, p);
}

void check_float_values(Device& dev, const TensorRef& t, bool positive, uint32_t code) {
  VKML_CHECK_ARG(t.dtype == DType::f32, "check_float_values: float32 values expected");
  Push p{};
  p.mode = positive ? VALUE_CHECK_POSITIVE : VALUE_CHECK_NONNEGATIVE_FINITE;
  p.code_below = code;
  run(dev, t, p);
}

}  // namespace vkml::ops
