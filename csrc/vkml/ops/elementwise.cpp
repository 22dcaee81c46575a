#include "vkml/ops/elementwise.h"

#include <array>
#include <cstring>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/elementwise_batch.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/device_error.h"
#include "vkml/shaders/elementwise_push.h"

namespace vkml::ops {

namespace {

using elementwise_detail::Push;

uint32_t f32_bits(double v) {
  float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

uint64_t encode(DType t, Scalar v) {
  if (t == DType::f64) {
    uint64_t bits;
    std::memcpy(&bits, &v.f, 8);
    return bits;
  }
  if (is_floating(t)) return f32_bits(v.f);
  if (t == DType::i64) return uint64_t(v.i);
  // Values wrap to the dtype, as PyTorch casts them: -7 with a uint8 tensor is 249.
  if (t == DType::u8) return uint8_t(v.i);
  if (t == DType::i8) return uint32_t(int32_t(int8_t(v.i)));
  if (t == DType::i16) return uint32_t(int32_t(int16_t(v.i)));
  return uint64_t(uint32_t(int32_t(v.i)));
}

VkPipeline pipeline_for(Device& dev, const Elementwise& e) {
  // One slot per (dtype, kernel kind, op): the per-op path is a table load.
  constexpr uint32_t kOps = 512, kKinds = 3, kDTypes = 16;
  static_assert(OP_PRELU_BACKWARD_WEIGHT < int(kOps));
  static const PipelineSlots slots({kDTypes, kKinds, kOps});
  const bool special = elementwise_detail::special_only(e.dtype, e.op);
  const uint32_t kind = special ? 2 : (e.compare ? 1 : 0);
  return slots.get(dev, {uint32_t(e.dtype), kind, uint32_t(e.op)}, [&] {
    if (!elementwise_supported(dev, e.dtype))
      fail(ErrorKind::InvalidArgument,
           std::string("vkml elementwise kernels do not support dtype ") + dtype_name(e.dtype) +
               " on " + dev.info().name);
    const Shader shader = special     ? shaders::elementwise_special(e.dtype)
                          : e.compare ? shaders::elementwise_cmp(e.dtype)
                                      : shaders::elementwise(e.dtype);
    VKML_CHECK_ARG(shader != Shader::none, std::string("elementwise: special functions have no ") +
                                               dtype_name(e.dtype) + " kernel");
    return dev.pipelines().get(shader, {e.op});
  });
}

// The kernels with a quad path (see elementwise.comp): float storage, not the
// _cmp and _special variants, no uint8 condition.
bool has_quads(const Elementwise& e) {
  return (e.dtype == DType::f32 || e.dtype == DType::f16 || e.dtype == DType::bf16) && !e.compare &&
         !elementwise_detail::special_only(e.dtype, e.op) && !(e.flags & EW_IN0_BOOL);
}

// The launches a multi-tensor table can hold (elementwise_batch.h): those kernels,
// for ops that do not use the element index.
bool batchable(const Elementwise& e) { return has_quads(e) && e.op != OP_ARANGE; }

// The *_table variant of a batchable kernel (elementwise_batch.h).
VkPipeline table_pipeline_for(Device& dev, const Elementwise& e) {
  constexpr uint32_t kOps = 512, kDTypes = 16;
  static const PipelineSlots slots({kDTypes, kOps});
  return slots.get(dev, {uint32_t(e.dtype), uint32_t(e.op)}, [&] {
    return dev.pipelines().get(shaders::elementwise_table(e.dtype), {e.op});
  });
}

size_t operand_itemsize(const Elementwise& e, int k) {
  if (k == 0) return e.compare ? 1 : itemsize(e.dtype);
  if (k == 1 && (e.flags & EW_IN0_BOOL)) return 1;
  return itemsize(e.dtype);
}

void launch(Device& dev, VkPipeline pipeline, const Elementwise& e, const uint64_t* ptr, int ndim) {
  const MultiLayout& l = e.layout;
  Push p{};
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) numel *= l.sizes[d];
  if (numel == 0) return;
  int64_t max_off = 0;
  for (int k = 0; k <= e.ninputs; ++k) {
    int64_t m = 0;
    for (int d = 0; d < ndim; ++d) m += (l.sizes[d] - 1) * l.strides[k][d];
    max_off = std::max(max_off, m);
  }
  check_32bit_indexing(numel, max_off, "elementwise");
  for (int k = 0; k < 4; ++k) p.ptr[k] = ptr[k];
  p.ndim = ndim;
  for (int d = 0; d < ndim; ++d) {
    p.size[d] = int32_t(l.sizes[d]);
    for (int k = 0; k < 4; ++k) p.stride[k][d] = k <= e.ninputs ? int32_t(l.strides[k][d]) : 0;
  }
  p.numel = uint32_t(numel);
  p.flags = e.flags;
  bool contiguous = ndim == 1;
  for (int k = 0; k <= e.ninputs && contiguous; ++k) {
    bool by_value = k > 0 && e.scalar[k - 1];
    if (!by_value && l.strides[k][0] != 1) contiguous = false;
  }
  if (contiguous) p.flags |= EW_CONTIGUOUS;
  // Quads of contiguous operands aligned to four elements.
  bool quads = contiguous && numel >= 4 && has_quads(e);
  for (int k = 0; k <= e.ninputs && quads; ++k) {
    bool by_value = k > 0 && e.scalar[k - 1];
    if (!by_value && ptr[k] % (4 * itemsize(e.dtype)) != 0) quads = false;
  }
  if (quads) p.flags |= EW_VEC4;
  for (int k = 0; k < 3; ++k) {
    if (e.scalar[k]) p.flags |= EW_SCALAR0 << k;
    p.s[k] = encode(e.dtype, e.slot[k]);
    if (e.has_hi[k]) {
      VKML_CHECK_ARG(is_floating(e.dtype) && e.dtype != DType::f64,
                     "elementwise: packed fp32 parameters need an fp32-computing dtype");
      p.s[k] = uint64_t(f32_bits(e.slot[k].f)) | (uint64_t(f32_bits(e.hi[k])) << 32);
    }
  }
  if (ndim == 1 && l.strides[0][0] == 1 && batchable(e) && batching()) {
    // Inside a multi-tensor op: held back into one dispatch for the list.
    HeldLaunch h{&dev,
                 VK_NULL_HANDLE,
                 p.flags & ~(EW_CONTIGUOUS | EW_VEC4),
                 e.ninputs,
                 itemsize(e.dtype),
                 {},
                 {},
                 uint32_t(numel),
                 0,
                 ptr[0] % (4 * itemsize(e.dtype)) == 0};
    bool ok = true;
    for (int k = 0; k <= e.ninputs; ++k) {
      h.ptr[k] = ptr[k];
      if (k == 0 || e.scalar[k - 1]) continue;
      const int64_t stride = l.strides[k][0];
      if (stride == 0) h.splat |= 1u << (k - 1);
      ok = ok && (stride == 0 || stride == 1);
      if (stride == 1 && ptr[k] % (4 * h.itemsize) != 0) h.aligned4 = false;
    }
    for (int k = 0; k < 3; ++k) h.s[k] = p.s[k];
    if (ok) {
      h.pipeline = table_pipeline_for(dev, e);
      if (hold_back(h)) return;
    }
  }
  Access access;
  for (int k = 0; k <= e.ninputs; ++k) {
    if (k > 0 && e.scalar[k - 1]) continue;
    Span s = span_of(ptr[k], operand_itemsize(e, k), ndim, l.sizes, l.strides[k]);
    if (k == 0)
      access.write(s);
    else
      access.read(s);
  }
  uint64_t threads = quads ? uint64_t(numel + 3) / 4 : uint64_t(numel);
  dispatch_1d(dev, pipeline, &p, sizeof(p), threads, ELEMENTWISE_WG, &access);
}

// More than three dims after collapsing: one dispatch per index of the
// outer dims, each with its operand pointers moved along.
void launch_outer(Device& dev, VkPipeline pipeline, const Elementwise& e, uint64_t* ptr, int ndim) {
  if (ndim <= 3) return launch(dev, pipeline, e, ptr, ndim);
  const MultiLayout& l = e.layout;
  int d = ndim - 1;
  for (int64_t i = 0; i < l.sizes[d]; ++i) {
    uint64_t moved[4];
    for (int k = 0; k < 4; ++k) {
      bool by_value = k > 0 && e.scalar[k - 1];
      moved[k] = (k <= e.ninputs && !by_value)
                     ? ptr[k] + uint64_t(i * l.strides[k][d] * int64_t(operand_itemsize(e, k)))
                     : ptr[k];
    }
    launch_outer(dev, pipeline, e, moved, ndim - 1);
  }
}

}  // namespace

namespace {

bool divides_integers(const Elementwise& e) {
  return !is_floating(e.dtype) && e.ninputs == 2 &&
         (e.op == OP_DIV_TRUNC || e.op == OP_DIV_FLOOR || e.op == OP_REMAINDER || e.op == OP_FMOD);
}

}  // namespace

void run_elementwise(Device& dev, Elementwise e) {
  if (divides_integers(e)) {
    // A divisor given by value is checked here, as the kernel will see it (256 is 0
    // for uint8, as on the CPU); a tensor's by the kernel, which notes a zero in the
    // device error record (ptr[3], unused by binary ops).
    if (e.scalar[1] && encode(e.dtype, e.slot[1]) == 0)
      raise_check_failure(DEVICE_ERROR_ZERO_DIVISION);
    e.ptr[3] = dev.errors().address();
  }
  e.layout.noperands = e.ninputs + 1;
  for (int k = 0; k < e.ninputs; ++k)
    if (e.scalar[k])
      for (int d = 0; d < e.layout.ndim; ++d) e.layout.strides[k + 1][d] = 0;
  e.layout.coalesce();
  if (e.layout.numel() == 0) return;
  VkPipeline pipeline = pipeline_for(dev, e);
  uint64_t ptr[4];
  for (int k = 0; k < 4; ++k) ptr[k] = e.ptr[k];
  launch_outer(dev, pipeline, e, ptr, e.layout.ndim);
}

bool elementwise_supported(Device& dev, DType t) {
  if (t == DType::f16) return dev.info().supports_fp16;
  if (t == DType::f64) return dev.info().supports_fp64;
  if (t == DType::i16) return dev.info().supports_int16;
  return shaders::elementwise(t) != Shader::none;
}

void fill(Device& dev, const TensorRef& t, Scalar value) {
  Elementwise e;
  e.op = OP_IDENTITY;
  e.dtype = t.dtype == DType::b8 ? DType::u8 : t.dtype;
  e.ninputs = 1;
  e.ptr[0] = t.address;
  e.scalar[0] = true;
  e.slot[0] = t.dtype == DType::b8 ? Scalar::of_int(value.i != 0 || value.f != 0) : value;
  set_operand_from(e.layout, 0, t);
  run_elementwise(dev, e);
}

void arange(Device& dev, const TensorRef& out, Scalar start, Scalar step) {
  VKML_CHECK_ARG(out.is_contiguous(), "arange: output must be contiguous");
  Elementwise e;
  e.op = OP_ARANGE;
  e.dtype = out.dtype;
  e.ninputs = 1;
  e.ptr[0] = out.address;
  e.scalar[0] = true;
  e.slot[0] = start;
  e.slot[1] = step;
  e.layout.ndim = 1;
  e.layout.sizes[0] = out.numel();
  e.layout.strides[0][0] = 1;
  run_elementwise(dev, e);
}

}  // namespace vkml::ops
