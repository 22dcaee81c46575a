#include "vkml/ops/norm.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"

namespace vkml::ops {

namespace {

struct Push {
  uint64_t x, gy, w, b, mean, rstd, out, sa, sb;
  uint32_t outer, c, inner, sdiv, smod, adiv, amod;
  float eps, count;
};
static_assert(sizeof(Push) <= 128);

void launch(Device& dev, DType dtype, int mode, Push p, const NormView& v) {
  const std::string name = std::string("norm_") + float_variant(dev, dtype, "norm");
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
  if (mode <= 1) {
    // One workgroup per c; narrow ones for short reductions.
    uint32_t wg = v.outer * v.inner >= 1024 ? 256 : 64;
    while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
    VkPipeline pipeline = dev.pipelines().get(name, {mode, int32_t(wg)});
    uint64_t groups = uint64_t(v.c);
    uint64_t max_x = std::min<uint64_t>(dev.info().max_workgroup_count[0], 65535);
    uint32_t gx = uint32_t(std::min(groups, max_x));
    uint32_t gy = uint32_t((groups + gx - 1) / gx);
    dev.stream().dispatch(pipeline, &p, sizeof(p), gx, gy, 1);
  } else {
    VkPipeline pipeline = dev.pipelines().get(name, {mode, int32_t(kWorkgroup)});
    dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), kWorkgroup);
  }
}

}  // namespace

void norm_stats(Device& dev, DType dtype, uint64_t x, uint64_t mean, uint64_t rstd,
                uint64_t var, const NormView& v, float eps) {
  Push p{};
  p.x = x;
  p.mean = mean;
  p.rstd = rstd;
  p.sa = var;
  p.eps = eps;
  launch(dev, dtype, 0, p, v);
}

void norm_forward(Device& dev, DType dtype, uint64_t x, uint64_t w, uint64_t b, uint64_t mean,
                  uint64_t rstd, uint64_t y, const NormView& v) {
  Push p{};
  p.x = x;
  p.w = w;
  p.b = b;
  p.mean = mean;
  p.rstd = rstd;
  p.out = y;
  launch(dev, dtype, 2, p, v);
}

void norm_backward_sums(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w,
                        uint64_t mean, uint64_t rstd, uint64_t sa, uint64_t sb,
                        const NormView& v) {
  Push p{};
  p.x = x;
  p.gy = gy;
  p.w = w;
  p.mean = mean;
  p.rstd = rstd;
  p.sa = sa;
  p.sb = sb;
  launch(dev, dtype, 1, p, v);
}

void norm_data_grad(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w,
                    uint64_t mean, uint64_t rstd, uint64_t sa, uint64_t sb, uint64_t gx,
                    const NormView& v, int64_t count) {
  Push p{};
  p.x = x;
  p.gy = gy;
  p.w = w;
  p.mean = mean;
  p.rstd = rstd;
  p.sa = sa;
  p.sb = sb;
  p.out = gx;
  p.count = float(count);
  launch(dev, dtype, 3, p, v);
}

}  // namespace vkml::ops
