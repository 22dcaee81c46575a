#include "vkml/ops/index.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/ops/layout.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/index_push.h"

namespace vkml::ops {

namespace {

using Push = index_detail::Push;

int64_t encode(DType t, Scalar v) {
  if (t == DType::f64) {
    int64_t bits;
    std::memcpy(&bits, &v.f, 8);
    return bits;
  }
  if (is_floating(t)) {
    float f = float(v.f);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return int64_t(bits);
  }
  if (t == DType::b8) return v.i != 0 ? 1 : 0;
  return v.i;
}

}  // namespace

void index_op(Device& dev, const IndexArgs& a) {
  VKML_CHECK_ARG(shaders::index(a.dtype) != Shader::none,
                 std::string("index kernels do not support dtype ") + dtype_name(a.dtype));
  VKML_CHECK_ARG((a.dtype != DType::f16 && a.dtype != DType::bf16) || dev.info().supports_fp16,
                 std::string(dtype_name(a.dtype)) + " is not supported on " + dev.info().name);
  VKML_CHECK_ARG(a.dtype != DType::f64 || dev.info().supports_fp64,
                 std::string("float64 is not supported on ") + dev.info().name);
  VKML_CHECK_ARG(a.dtype != DType::i16 || dev.info().supports_int16,
                 std::string("int16 is not supported on ") + dev.info().name);
  VKML_CHECK_ARG(a.idx.dtype == DType::i64 || a.idx.dtype == DType::i32,
                 "index kernels take int64 or int32 indices");
  VKML_CHECK_ARG(a.dst.ndim == a.idx.ndim && (a.src.address == 0 || a.src.ndim == a.dst.ndim),
                 "index kernels: operands must share the iteration shape");
  bool reduce = a.mode == IndexMode::Scatter && a.reduce != IndexReduce::Assign;
  VKML_CHECK_ARG(!reduce || a.dtype != DType::f16,
                 "index kernels: float16 reductions are not supported (accumulate in float32)");
  VKML_CHECK_ARG(a.src.address != 0 || a.mode == IndexMode::Scatter,
                 "index kernels: a gather needs a source tensor");
  // Reductions with no atomic form run serially, and so does any scatter the caller asks
  // to (torch.use_deterministic_algorithms: sums and colliding copies in the CPU's order).
  bool serial = (reduce && (a.dtype == DType::f64 ||
                            (a.dtype == DType::i64 && a.reduce != IndexReduce::Add))) ||
                (a.serial && a.mode == IndexMode::Scatter);

  MultiLayout l;
  l.noperands = 3;
  set_operand_from(l, 0, a.dst);
  set_operand_from(l, 2, a.idx);
  if (a.src.address != 0) {
    set_operand_from(l, 1, a.src);
  } else {
    for (int d = 0; d < l.ndim; ++d) l.strides[1][d] = 0;
  }
  for (int d = 0; d < l.ndim; ++d)
    if (l.sizes[d] == 0) return;
  l.coalesce();
  int64_t numel = l.numel();
  int64_t reach = (a.dim_size > 0 ? a.dim_size - 1 : 0) * a.dim_stride;
  check_32bit_indexing(numel, l.max_offset(0) + (a.mode == IndexMode::Scatter ? reach : 0),
                       "index");
  check_32bit_indexing(numel, l.max_offset(1) + (a.mode == IndexMode::Gather ? reach : 0), "index");
  check_32bit_indexing(numel, l.max_offset(2), "index");

  int op = a.mode == IndexMode::Scatter ? int(a.reduce) : 0;
  static const PipelineSlots slots({16, 2, 5, 2});  // dtype, mode, reduction, serial
  VkPipeline pipeline =
      slots.get(dev, {uint32_t(a.dtype), uint32_t(a.mode), uint32_t(op), serial}, [&] {
        return dev.pipelines().get(shaders::index(a.dtype), {int(a.mode), op, serial ? 1 : 0});
      });
  Push p{};
  p.scalar = encode(a.dtype, a.value);
  p.skip = a.skip_value;
  int inner = l.ndim < INDEX_DIMS ? l.ndim : INDEX_DIMS;
  int64_t inner_numel = 1;
  for (int d = 0; d < INDEX_DIMS; ++d) {
    p.size[d] = d < inner ? int32_t(l.sizes[d]) : 1;
    p.dst_stride[d] = d < inner ? int32_t(l.strides[0][d]) : 0;
    p.src_stride[d] = d < inner ? int32_t(l.strides[1][d]) : 0;
    p.idx_stride[d] = d < inner ? int32_t(l.strides[2][d]) : 0;
    if (d < inner) inner_numel *= l.sizes[d];
  }
  p.numel = uint32_t(inner_numel);
  p.dim_stride = int32_t(a.dim_stride);
  p.dim_size = int32_t(a.dim_size);
  p.flags = (a.src.address != 0 ? INDEX_HAS_SRC : 0) | (a.wrap_negative ? INDEX_WRAP : 0) |
            (a.skip ? INDEX_SKIP : 0) | (a.idx.dtype == DType::i32 ? INDEX_IDX_I32 : 0) |
            (a.dtype == DType::b8 ? INDEX_BOOL : 0);
  size_t isz[3] = {itemsize(a.dtype), itemsize(a.dtype), itemsize(a.idx.dtype)};
  uint64_t base[3] = {a.dst.address, a.src.address, a.idx.address};

  // Declared over whole tensors (every outer dispatch alike); the indexed side
  // spans every position an in-range index can reach along the dim.
  auto plain = [&](const TensorRef& t) {
    return span_of(t.address, itemsize(a.dtype), t.ndim, t.sizes, t.strides);
  };
  auto reaching = [&](const TensorRef& t) {
    Span s = plain(t);
    int64_t r = (a.dim_size > 0 ? a.dim_size - 1 : 0) * a.dim_stride * int64_t(itemsize(a.dtype));
    if (s.end > s.begin) (r < 0 ? s.begin : s.end) += uint64_t(r);
    return s;
  };
  const bool gather = a.mode == IndexMode::Gather;
  Access acc;
  acc.write(gather ? plain(a.dst) : reaching(a.dst));
  if (a.src.address) acc.read(gather ? reaching(a.src) : plain(a.src));
  acc.read(span_of(a.idx));

  // Dims beyond INDEX_DIMS (rare after coalescing) are walked here, one dispatch each.
  int64_t outer = numel / inner_numel;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t r = o;
    uint64_t ptr[3] = {base[0], base[1], base[2]};
    for (int d = inner; d < l.ndim; ++d) {
      int64_t c = r % l.sizes[d];
      r /= l.sizes[d];
      for (int k = 0; k < 3; ++k)
        if (base[k] != 0) ptr[k] += uint64_t(c * l.strides[k][d]) * isz[k];
    }
    p.dst = ptr[0];
    // Without a src the kernel still gets a valid address (dst's, src strides 0):
    // a driver may run the src load that INDEX_HAS_SRC skips (Mesa 26's lavapipe does).
    p.src = ptr[1] != 0 ? ptr[1] : ptr[0];
    p.idx = ptr[2];
    if (!serial) {
      dispatch_1d(dev, pipeline, &p, sizeof(p), inner_numel, INDEX_WG, &acc);
      continue;
    }
    // Element by element, in dispatches short enough for the loop limit (each element
    // costs up to five iterations: the walk and its dims); the stream orders them.
    const int64_t limit = dev.info().loop_iteration_limit;
    const int64_t chunk = limit ? std::max<int64_t>(1, limit / 8) : inner_numel;
    for (int64_t first = 0; first < inner_numel; first += chunk) {
      p.serial_first = uint32_t(first);
      p.serial_end = uint32_t(std::min(inner_numel, first + chunk));
      dispatch_1d(dev, pipeline, &p, sizeof(p), 1, INDEX_WG, &acc);
    }
  }
}

}  // namespace vkml::ops
