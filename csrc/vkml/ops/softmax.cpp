#include "vkml/ops/softmax.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/softmax_push.h"

namespace vkml::ops {

namespace {

using Push = softmax_detail::Push;

// Rows shorter than this (inner == 1) get one thread each instead of a workgroup.
constexpr int64_t kRowMinDim = 64;

void launch(Device& dev, DType dtype, int mode, uint64_t x, uint64_t y, uint64_t out,
            SoftmaxShape s) {
  VKML_CHECK_ARG(dtype == DType::f32 || dtype == DType::f16 || dtype == DType::f64,
                 std::string("softmax: unsupported dtype ") + dtype_name(dtype));
  VKML_CHECK_ARG(dtype != DType::f64 || dev.info().supports_fp64,
                 "softmax: float64 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(dtype != DType::f16 || dev.info().supports_fp16,
                 "softmax: float16 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(s.outer >= 0 && s.dim >= 0 && s.inner >= 0, "softmax: negative size");
  int64_t numel = s.outer * s.dim * s.inner;
  if (numel == 0) return;
  check_32bit_indexing(numel, numel, "softmax");
  bool row = s.inner == 1 && s.dim >= kRowMinDim;
  uint32_t wg = row && s.dim <= 1024 ? 64 : 256;
  while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  // Row elements a thread keeps in registers: as few as hold the row (rows longer
  // than 16 a thread are streamed).
  uint32_t regs = 16;
  for (uint32_t r : {4u, 8u})
    if (regs == 16 && s.dim <= int64_t(r) * wg) regs = r;
  const uint32_t regs_class = regs == 4 ? 0 : regs == 8 ? 1 : 2;
  // Keyed by (dtype, mode, row, wg == 64 and regs); wg only shrinks below 256 on
  // small devices.
  static const PipelineSlots slots({16, 4, 2, 6});
  VkPipeline pipeline = slots.get(
      dev, {uint32_t(dtype), uint32_t(mode), row, (wg == 64 ? 3u : 0u) + regs_class}, [&] {
        return dev.pipelines().get(shaders::softmax(dtype),
                                   {mode, row ? 1 : 0, int32_t(wg), int32_t(regs)});
      });
  Push p{.x = x,
         .y = y,
         .dst = out,
         .outer = uint32_t(s.outer),
         .dim = uint32_t(s.dim),
         .inner = uint32_t(s.inner)};
  Access a;
  a.read(span_elems(x, numel, itemsize(dtype)));
  if (y) a.read(span_elems(y, numel, itemsize(dtype)));
  a.write(span_elems(out, numel, itemsize(dtype)));
  if (row) {
    dispatch_groups(dev, pipeline, &p, sizeof(p), uint64_t(s.outer), &a);
  } else {
    dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(s.outer * s.inner), wg, &a);
  }
}

}  // namespace

void softmax(Device& dev, DType dtype, uint64_t in, uint64_t out, SoftmaxShape s, bool log) {
  launch(dev, dtype, log ? SOFTMAX_LOG_FORWARD : SOFTMAX_FORWARD, in, 0, out, s);
}

void softmax_backward(Device& dev, DType dtype, uint64_t grad_out, uint64_t out, uint64_t grad_in,
                      SoftmaxShape s, bool log) {
  launch(dev, dtype, log ? SOFTMAX_LOG_BACKWARD : SOFTMAX_BACKWARD, grad_out, out, grad_in, s);
}

}  // namespace vkml::ops
