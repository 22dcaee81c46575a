#include "vkml/ops/norm.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/norm_push.h"

namespace vkml::ops {

namespace {

using Push = norm_detail::Push;

constexpr int64_t kRowRegisters = NORM_ROW_REGISTERS;

// Per-c reductions (modes 0 and 1) split into parts (modes 6-10 of norm.comp) until
// there are about kTargetGroups workgroups, each part at least kPartElements long:
// batch norm has few channels of many elements, and one workgroup per channel would
// leave most of a GPU idle (64 workgroups for ResNet's first layers).
constexpr int64_t kTargetGroups = 2048, kPartElements = 8192, kMaxParts = 256;

int64_t parts_for(Device& dev, const NormView& v) {
  const int64_t per_c = v.outer * v.inner;
  const int64_t by_size = per_c / kPartElements;
  const int64_t by_groups = (kTargetGroups + v.c - 1) / v.c;
  // A loop-limited driver (Mesa 22.3's lavapipe ends every loop of an invocation after
  // 65535 iterations, silently) needs parts short enough for a thread's two passes to stay
  // under half its limit, however many channels there are.
  const int64_t limit = dev.info().loop_iteration_limit;
  const int64_t by_limit = limit == 0 ? 1 : (4 * per_c + 256 * limit - 1) / (256 * limit);
  return std::clamp<int64_t>(std::max(std::min(by_size, by_groups), by_limit), 1, kMaxParts);
}

// Rows longer than this go the per-channel way (statistics split into parts, then an
// elementwise pass) rather than one workgroup per row: that workgroup would do all the
// work of a few long rows alone, and on a loop-limited driver its loops ended early (a
// layer norm over rows of 9.4M elements came back wrong on lavapipe).
constexpr int64_t kLongRow = int64_t(1) << 20;

void check_rows(const NormView& v) {
  VKML_CHECK_ARG(v.outer == 1 && v.sdiv == v.inner && v.smod == v.c,
                 "norm: rows need one statistic per row of contiguous elements");
}

void launch(Device& dev, DType dtype, int mode, Push p, const NormView& v) {
  int64_t numel = v.outer * v.c * v.inner;
  if (numel == 0) return;
  check_32bit_indexing(numel, 0, "norm");
  p.outer = uint32_t(v.outer);
  p.c = uint32_t(v.c);
  p.inner = uint32_t(v.inner);
  p.sdiv = uint32_t(v.sdiv);
  p.smod = uint32_t(v.smod);
  p.adiv = uint32_t(v.adiv);
  p.amod = uint32_t(v.amod);
  // Activations (x, gy, out) have numel elements; every per-statistic or per-channel
  // array (fp32) is given the largest of its possible lengths.
  size_t is = itemsize(dtype);
  int64_t per = std::max({v.c, v.smod, v.amod});
  bool writes_stats = mode == NORM_STATISTICS || mode == NORM_ROWS_FORWARD ||
                      mode == NORM_COMBINE_STATISTICS;  // mean, rstd, sa (the variance)
  bool writes_sums = mode == NORM_BACKWARD_SUMS || mode == NORM_COMBINE_BACKWARD_SUMS;  // sa, sb
  Access a;
  a.read(span_elems(p.x, numel, is));
  if (p.gy) a.read(span_elems(p.gy, numel, is));
  for (uint64_t ptr : {p.w, p.b}) {
    if (ptr) a.read(span_elems(ptr, per, 4));
  }
  for (uint64_t ptr : {p.mean, p.rstd}) {
    if (ptr) (writes_stats ? a.write(span_elems(ptr, per, 4)) : a.read(span_elems(ptr, per, 4)));
  }
  if (p.sa)
    (writes_stats || writes_sums ? a.write(span_elems(p.sa, per, 4))
                                 : a.read(span_elems(p.sa, per, 4)));
  if (p.sb) (writes_sums ? a.write(span_elems(p.sb, per, 4)) : a.read(span_elems(p.sb, per, 4)));
  if (mode >= NORM_FORWARD && mode <= NORM_ROWS_DATA_GRAD) a.write(span_elems(p.dst, numel, is));
  if (p.part) {  // modes 6-10 read and write their scratch
    a.read(span_elems(p.part, 2 * v.c * p.parts, 4));
    a.write(span_elems(p.part, 2 * v.c * p.parts, 4));
  }
  // Modes 0, 1, 4 and 5 run one workgroup per c, narrow ones (64 threads) for short
  // reductions: in modes 4 and 5, rows that fit in their registers. Modes 6, 7 and 9
  // run a wide workgroup per part, modes 8 and 10 a thread per c.
  const bool per_c =
      mode <= NORM_BACKWARD_SUMS || mode == NORM_ROWS_FORWARD || mode == NORM_ROWS_DATA_GRAD;
  const bool per_part =
      mode == NORM_PART_SUMS || mode == NORM_PART_DEVIATIONS || mode == NORM_PART_BACKWARD_SUMS;
  const bool combine = mode == NORM_COMBINE_STATISTICS || mode == NORM_COMBINE_BACKWARD_SUMS;
  const int64_t reduced = v.outer * v.inner;
  const bool wide =
      per_part || (!per_c && !combine) ||
      (per_c && (mode >= NORM_ROWS_FORWARD ? reduced > 64 * kRowRegisters : reduced >= 1024));
  uint32_t wg = wide ? 256 : 64;
  while ((per_c || per_part) && wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  static const PipelineSlots slots({16, NORM_COMBINE_BACKWARD_SUMS + 1, 2});  // dtype, mode, wide
  VkPipeline pipeline = slots.get(dev, {uint32_t(dtype), uint32_t(mode), wide}, [&] {
    check_float_dtype(dev, dtype, "norm");
    return dev.pipelines().get(shaders::norm(dtype), {mode, int32_t(wg)});
  });
  if (per_c)
    dispatch_groups(dev, pipeline, &p, sizeof(p), uint64_t(v.c), &a);
  else if (per_part)
    dispatch_groups(dev, pipeline, &p, sizeof(p), uint64_t(v.c) * p.parts, &a);
  else
    dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(combine ? v.c : numel), wg, &a);
}

// Mode 0 or 1, split into parts where that fills the GPU better (parts_for).
void per_channel(Device& dev, DType dtype, int mode, Push p, const NormView& v) {
  const int64_t parts = parts_for(dev, v);
  if (parts <= 1 || v.outer * v.c * v.inner == 0) {
    launch(dev, dtype, mode, p, v);
    return;
  }
  // The stream orders later work after these dispatches, so the scratch is freed at once.
  Allocation scratch = dev.memory().allocate(uint64_t(2 * v.c * parts) * 4);
  p.part = scratch.address;
  p.parts = uint32_t(parts);
  if (mode == NORM_STATISTICS) {
    for (int m : {NORM_PART_SUMS, NORM_PART_DEVIATIONS, NORM_COMBINE_STATISTICS})
      launch(dev, dtype, m, p, v);
  } else {
    for (int m : {NORM_PART_BACKWARD_SUMS, NORM_COMBINE_BACKWARD_SUMS}) launch(dev, dtype, m, p, v);
  }
  dev.memory().free(scratch.address);
}

}  // namespace

void norm_rows_forward(Device& dev, DType dtype, uint64_t x, uint64_t w, uint64_t b, uint64_t mean,
                       uint64_t rstd, uint64_t y, const NormView& v, float eps) {
  check_rows(v);
  if (v.inner > kLongRow) {
    norm_stats(dev, dtype, x, mean, rstd, /*var=*/0, v, eps);
    norm_forward(dev, dtype, x, w, b, mean, rstd, y, v);
    return;
  }
  launch(dev, dtype, NORM_ROWS_FORWARD,
         {.x = x, .w = w, .b = b, .mean = mean, .rstd = rstd, .dst = y, .eps = eps}, v);
}

void norm_rows_data_grad(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w,
                         uint64_t mean, uint64_t rstd, uint64_t gx, const NormView& v) {
  check_rows(v);
  if (v.inner > kLongRow) {  // the two sums per row, split into parts, then gx
    Allocation sums = dev.memory().allocate(uint64_t(2 * v.c) * 4);
    const uint64_t sa = sums.address, sb = sums.address + uint64_t(v.c) * 4;
    norm_backward_sums(dev, dtype, x, gy, w, mean, rstd, sa, sb, v);
    norm_data_grad(dev, dtype, x, gy, w, mean, rstd, sa, sb, gx, v, v.inner);
    dev.memory().free(sums.address);  // the stream orders later work after these
    return;
  }
  launch(dev, dtype, NORM_ROWS_DATA_GRAD,
         {.x = x, .gy = gy, .w = w, .mean = mean, .rstd = rstd, .dst = gx, .count = float(v.inner)},
         v);
}

void norm_stats(Device& dev, DType dtype, uint64_t x, uint64_t mean, uint64_t rstd, uint64_t var,
                const NormView& v, float eps) {
  per_channel(dev, dtype, NORM_STATISTICS,
              {.x = x, .mean = mean, .rstd = rstd, .sa = var, .eps = eps}, v);
}

void norm_forward(Device& dev, DType dtype, uint64_t x, uint64_t w, uint64_t b, uint64_t mean,
                  uint64_t rstd, uint64_t y, const NormView& v) {
  launch(dev, dtype, NORM_FORWARD, {.x = x, .w = w, .b = b, .mean = mean, .rstd = rstd, .dst = y},
         v);
}

void norm_backward_sums(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w,
                        uint64_t mean, uint64_t rstd, uint64_t sa, uint64_t sb, const NormView& v) {
  per_channel(dev, dtype, NORM_BACKWARD_SUMS,
              {.x = x, .gy = gy, .w = w, .mean = mean, .rstd = rstd, .sa = sa, .sb = sb}, v);
}

void norm_data_grad(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w, uint64_t mean,
                    uint64_t rstd, uint64_t sa, uint64_t sb, uint64_t gx, const NormView& v,
                    int64_t count) {
  launch(dev, dtype, NORM_DATA_GRAD,
         {.x = x,
          .gy = gy,
          .w = w,
          .mean = mean,
          .rstd = rstd,
          .dst = gx,
          .sa = sa,
          .sb = sb,
          .count = float(count)},
         v);
}

}  // namespace vkml::ops
