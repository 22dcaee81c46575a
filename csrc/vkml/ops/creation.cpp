#include "vkml/ops/creation.h"

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"

namespace vkml::ops {

namespace {

// The push constants of shaders/linspace.comp, per variant precision.
template <class T>
struct Push {
  uint64_t dst;
  T start, end, step;
  uint32_t n, halfway;
};
static_assert(sizeof(Push<double>) <= 128);

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
    Push<double> p{dst, start, end, step, n32, half};
    dispatch_1d(dev, dev.pipelines().get("linspace_f64"), &p, sizeof(p), uint64_t(n), kWorkgroup,
                &access);
  } else {
    Push<float> p{dst, float(start), float(end), float(step), n32, half};
    dispatch_1d(dev, dev.pipelines().get("linspace_f32"), &p, sizeof(p), uint64_t(n), kWorkgroup,
                &access);
  }
}

}  // namespace vkml::ops
