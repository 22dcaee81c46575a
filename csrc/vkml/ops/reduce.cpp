#include "vkml/ops/reduce.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/launch.h"
#include "vkml/ops/tensor.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/reduce_push.h"

namespace vkml::ops {

namespace {

// Below this many elements per output an inner == 1 reduction uses one thread
// per output instead of a workgroup.
constexpr int64_t kRowMinR = 64;

using Push = reduce_detail::Push;

// Values (and, for max/min, indices) of one end of a pass. `acc`: accumulator-
// typed partials with int32 indices rather than final values with int64 ones.
struct Operand {
  uint64_t val = 0;
  uint64_t idx = 0;
  bool acc = false;
};

struct Plan {
  ReduceOp op;
  DType dtype;
  float scale;
  bool track_idx;
  uint32_t max_wg;
};

size_t acc_size(DType t) { return t == DType::i64 || t == DType::f64 ? 8 : 4; }

void pass(Device& dev, const Plan& p, const Operand& in, int64_t outer, int64_t r, int64_t inner,
          int64_t splits, int64_t chunk, const Operand& out) {
  bool row = inner == 1 && chunk >= kRowMinR;
  // Rows from 1024 elements take 256 threads on GPUs; on CPU devices, where each
  // barrier of the tree splits the kernel's SIMD loop, from 4096 (2-3x faster there).
  const int64_t wide_from = dev.info().device_type == "cpu" ? 4097 : 1024;
  const bool wide = !row || chunk >= wide_from;
  uint32_t wg = std::min(wide ? 256u : 64u, p.max_wg);
  // Keyed by (dtype, op, row, wide); max_wg and the device type are fixed per device.
  static const PipelineSlots slots({16, 8, 2, 2});
  VkPipeline pipeline = slots.get(dev, {uint32_t(p.dtype), uint32_t(p.op), row, wide}, [&] {
    return dev.pipelines().get(shaders::reduce(p.dtype), {int32_t(p.op), row ? 1 : 0, int32_t(wg)});
  });
  Push push{};
  push.in_ptr = in.val;
  push.in_idx = in.idx;
  push.out_ptr = out.val;
  push.out_idx = out.idx;
  push.outer = uint32_t(outer);
  push.r = uint32_t(r);
  push.inner = uint32_t(inner);
  push.chunk = uint32_t(chunk);
  push.splits = uint32_t(splits);
  push.flags = (in.acc ? REDUCE_IN_ACC : 0) | (out.acc ? REDUCE_OUT_ACC : 0) |
               (out.val ? REDUCE_WANT_VAL : 0) | (out.idx ? REDUCE_WANT_IDX : 0) |
               (!out.acc && p.scale != 1.0f ? REDUCE_SCALE : 0);
  push.scale = p.scale;
  // Element sizes are over-estimated (the wider of value and accumulator, 8-byte
  // indices): a larger span costs at most a spare barrier, a short one a missed hazard.
  size_t vsize = std::max(itemsize(p.dtype), acc_size(p.dtype));
  Access a;
  a.read(span_elems(in.val, outer * r * inner, vsize));
  if (in.idx) a.read(span_elems(in.idx, outer * r * inner, 8));
  if (out.val) a.write(span_elems(out.val, outer * splits * inner, vsize));
  if (out.idx) a.write(span_elems(out.idx, outer * splits * inner, 8));
  if (row) {
    dispatch_groups(dev, pipeline, &push, sizeof(push), uint64_t(outer * splits), &a);
  } else {
    dispatch_1d(dev, pipeline, &push, sizeof(push), uint64_t(outer * splits * inner), wg, &a);
  }
}

// How many chunks to cut r into so that enough threads work on few outputs.
int64_t choose_splits(int64_t outer, int64_t r, int64_t inner) {
  if (inner == 1 && r >= kRowMinR) {
    // One workgroup per output: aim for ~512 workgroups of >= 4096 elements.
    if (outer >= 256 || r < 8192) return 1;
    return std::max<int64_t>(1, std::min(ceil_div(r, 4096), ceil_div(512, outer)));
  }
  // One thread per output: aim for ~64K threads looping over >= 128 elements.
  int64_t outputs = outer * inner;
  if (outputs >= 32768 || r < 1024) return 1;
  return std::max<int64_t>(1, std::min(ceil_div(r, 128), ceil_div(65536, outputs)));
}

void run(Device& dev, const Plan& p, const Operand& in, int64_t outer, int64_t r, int64_t inner,
         const Operand& out) {
  int64_t splits = choose_splits(outer, r, inner);
  int64_t chunk = ceil_div(r, splits);
  splits = ceil_div(r, chunk);
  if (splits == 1) return pass(dev, p, in, outer, r, inner, 1, r, out);
  int64_t n = outer * splits * inner;
  Allocation vals = dev.memory().allocate(uint64_t(n) * acc_size(p.dtype));
  Allocation idx;
  if (p.track_idx) idx = dev.memory().allocate(uint64_t(n) * 4);
  Operand mid{vals.address, idx.address, true};
  pass(dev, p, in, outer, r, inner, splits, chunk, mid);
  run(dev, p, mid, outer, splits, inner, out);
  // Later dispatches are ordered after these by the stream's barriers, so the
  // scratch memory can be handed out again at once.
  dev.memory().free(vals.address);
  if (idx.address) dev.memory().free(idx.address);
}

}  // namespace

void reduce(Device& dev, const ReduceArgs& a) {
  DType dt = a.dtype == DType::b8 ? DType::u8 : a.dtype;
  VKML_CHECK_ARG(shaders::reduce(dt) != Shader::none,
                 std::string("reduce: unsupported dtype ") + dtype_name(a.dtype));
  VKML_CHECK_ARG(dt != DType::f16 || dev.info().supports_fp16,
                 "reduce: float16 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(dt != DType::f64 || dev.info().supports_fp64,
                 "reduce: float64 is not supported on " + dev.info().name);
  // The kernel scales in float32: a float64 result is scaled by the caller.
  VKML_CHECK_ARG(dt != DType::f64 || a.scale == 1.0, "reduce: float64 results are not scaled");
  VKML_CHECK_ARG(a.outer >= 0 && a.r >= 0 && a.inner >= 0, "reduce: negative size");
  bool track = a.op == ReduceOp::Max || a.op == ReduceOp::Min || a.op == ReduceOp::ArgMax ||
               a.op == ReduceOp::ArgMin;
  bool arg = a.op == ReduceOp::ArgMax || a.op == ReduceOp::ArgMin;
  VKML_CHECK_ARG(arg ? a.indices != 0 : a.out != 0, "reduce: no output given");
  if (a.outer * a.inner == 0) return;
  if (a.r == 0) {
    VKML_CHECK_ARG(!track, "reduce: max/min/argmax/argmin of an empty dimension");
    if (!a.out) return;
    TensorRef t = TensorRef::contiguous(a.out, dt, {a.outer * a.inner});
    switch (a.op) {
      case ReduceOp::Sum:
        return fill(dev, t, is_floating(dt) ? Scalar::of(0.0 * a.scale) : Scalar::of_int(0));
      case ReduceOp::Prod:
        return fill(dev, t,
                    is_floating(dt) ? Scalar::of(a.scale) : Scalar::of_int(int64_t(a.scale)));
      case ReduceOp::All:
        return fill(dev, t, Scalar::of_int(1));
      default:
        return fill(dev, t, Scalar::of_int(0));
    }
  }
  int64_t numel = a.outer * a.r * a.inner;
  check_32bit_indexing(numel, numel, "reduce");
  uint32_t max_wg = 256;
  while (max_wg > 64 && max_wg > dev.info().max_workgroup_invocations) max_wg /= 2;
  Plan p{a.op, dt, float(a.scale), track, max_wg};
  Operand in{a.in, 0, false};
  Operand out{a.out, track ? a.indices : 0, false};
  run(dev, p, in, a.outer, a.r, a.inner, out);
}

}  // namespace vkml::ops
