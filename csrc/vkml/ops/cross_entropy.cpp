#include "vkml/ops/cross_entropy.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/cross_entropy_push.h"

namespace vkml::ops {

namespace {

enum Mode : uint32_t {
  kRows = CROSS_ENTROPY_ROWS,
  kReduce = CROSS_ENTROPY_REDUCE,
  kBackward = CROSS_ENTROPY_BACKWARD
};

using Push = cross_entropy_detail::Push;

Push make_push(Device& dev, const CrossEntropyArgs& a) {
  check_float_dtype(dev, a.dtype, "cross_entropy");
  VKML_CHECK_ARG(a.n >= 0 && a.c > 0, "cross_entropy: bad size");
  VKML_CHECK_ARG(a.n == 0 || (a.scores && a.target && a.lse),
                 "cross_entropy: scores, target and lse needed");
  VKML_CHECK_ARG(!(a.weight && a.label_smoothing != 0.0f) || a.weight_sum,
                 "cross_entropy: label smoothing with a weight needs weight_sum");
  check_32bit_indexing(a.n * a.c, a.n * a.c, "cross_entropy");
  Push p{};
  p.scores = a.scores;
  p.target = a.target;
  // Absent operands still get readable addresses of their type and size (the scores'
  // first row, the fp32 lse): a driver may run a load whose branch is not taken
  // (Mesa 26's lavapipe does). Nothing reads them when n == 0.
  p.weight = a.weight ? a.weight : a.scores;
  p.weight_sum = a.weight_sum ? a.weight_sum : a.lse;
  p.lse = a.lse;
  p.total = a.total_weight ? a.total_weight : a.lse;
  p.ignore_index = a.ignore_index;
  p.n = uint32_t(a.n);
  p.c = uint32_t(a.c);
  p.reduction = int32_t(a.reduction);
  p.flags = (a.weight ? CROSS_ENTROPY_WEIGHT : 0) |
            (a.weight && a.label_smoothing != 0.0f ? CROSS_ENTROPY_WEIGHT_SUM : 0);
  p.smoothing = a.label_smoothing;
  p.errors = dev.errors().address();
  return p;
}

// Short rows get 64 threads: most of 256 would idle.
uint32_t workgroup(Device& dev, Mode mode, int64_t c) {
  uint32_t wg = mode != kReduce && c <= 1024 ? 64 : 256;
  while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  return wg;
}

VkPipeline pipeline(Device& dev, DType dtype, Mode mode, uint32_t wg) {
  // Keyed by (dtype, mode, wg == 64); wg only shrinks below 256 on small devices.
  static const PipelineSlots slots({16, 3, 2});
  return slots.get(dev, {uint32_t(dtype), mode, wg == 64 ? 1u : 0u}, [&] {
    return dev.pipelines().get(shaders::cross_entropy(dtype), {int32_t(mode), int32_t(wg)});
  });
}

// What every mode reads besides its own operands.
void read_common(Access& acc, const CrossEntropyArgs& a) {
  acc.read(span_elems(a.target, a.n, 8));
  if (a.weight) acc.read(span_elems(a.weight, a.c, itemsize(a.dtype)));
  if (a.weight_sum) acc.read(span_elems(a.weight_sum, 1, 4));
}

}  // namespace

void cross_entropy_forward(Device& dev, const CrossEntropyArgs& a, uint64_t output, uint64_t rows) {
  Push p = make_push(dev, a);
  const bool none = a.reduction == Reduction::None;
  VKML_CHECK_ARG(none ? output || a.n == 0 : output && a.total_weight && (rows || a.n == 0),
                 "cross_entropy_forward: output (and rows, total_weight to reduce) needed");
  const size_t is = itemsize(a.dtype);
  p.dst = output;
  p.rows = rows;
  if (a.n > 0) {
    uint32_t wg = workgroup(dev, kRows, a.c);
    Access acc;
    read_common(acc, a);
    acc.read(span_elems(a.scores, a.n * a.c, is));
    acc.write(span_elems(a.lse, a.n, 4));
    acc.write(none ? span_elems(output, a.n, is) : span_elems(rows, a.n, 4));
    dispatch_groups(dev, pipeline(dev, a.dtype, kRows, wg), &p, sizeof(p), uint64_t(a.n), &acc);
  }
  if (none) return;
  // One workgroup, also for n == 0: it writes the empty sum (or mean, NaN).
  uint32_t wg = workgroup(dev, kReduce, a.c);
  Access acc;
  read_common(acc, a);
  acc.read(span_elems(rows, a.n, 4));
  acc.write(span_elems(output, 1, is));
  acc.write(span_elems(a.total_weight, 1, 4));
  dispatch_groups(dev, pipeline(dev, a.dtype, kReduce, wg), &p, sizeof(p), 1, &acc);
}

void cross_entropy_backward(Device& dev, const CrossEntropyArgs& a, uint64_t grad_output,
                            uint64_t grad_input) {
  Push p = make_push(dev, a);
  if (a.n == 0) return;
  VKML_CHECK_ARG(grad_output && grad_input, "cross_entropy_backward: grads needed");
  VKML_CHECK_ARG(a.reduction != Reduction::Mean || a.total_weight,
                 "cross_entropy_backward: mean reduction needs total_weight");
  const size_t is = itemsize(a.dtype);
  p.dst = grad_output;
  p.grad_input = grad_input;
  uint32_t wg = workgroup(dev, kBackward, a.c);
  Access acc;
  read_common(acc, a);
  acc.read(span_elems(a.scores, a.n * a.c, is));
  acc.read(span_elems(a.lse, a.n, 4));
  acc.read(span_elems(grad_output, a.reduction == Reduction::None ? a.n : 1, is));
  if (a.reduction == Reduction::Mean) acc.read(span_elems(a.total_weight, 1, 4));
  acc.write(span_elems(grad_input, a.n * a.c, is));
  dispatch_groups(dev, pipeline(dev, a.dtype, kBackward, wg), &p, sizeof(p), uint64_t(a.n), &acc);
}

}  // namespace vkml::ops
