#include "vkml/ops/creation.h"

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/linspace_push.h"

namespace vkml::ops {

namespace {

using linspace_detail::Push;

}  // namespace

void linspace(Device& dev, uint64_t dst, bool f64, int64_t n, double start, double end,
              double step) {
  VKML_CHECK_ARG(!f64 || dev.info().supports_fp64,
                 "linspace: float64 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(n >= 0 && n < (int64_t(1) << 32), "linspace: at most 2^32 - 1 steps");
  if (n == 0) return;
  auto n32 = uint32_t(n), half = uint32_t(n / 2);
  Access access;
  access.write(span_elems(dst, n, f64 ? sizeof(double) : sizeof(float)));
  if (f64) {
    Push<double> p{.dst = dst, .start = start, .end = end, .step = step, .n = n32, .halfway = half};
    dispatch_1d(dev, dev.pipelines().get(Shader::linspace_f64), &p, sizeof(p), uint64_t(n),
                LINSPACE_WG, &access);
  } else {
    Push<float> p{.dst = dst,
                  .start = float(start),
                  .end = float(end),
                  .step = float(step),
                  .n = n32,
                  .halfway = half};
    dispatch_1d(dev, dev.pipelines().get(Shader::linspace_f32), &p, sizeof(p), uint64_t(n),
                LINSPACE_WG, &access);
  }
}

}  // namespace vkml::ops
