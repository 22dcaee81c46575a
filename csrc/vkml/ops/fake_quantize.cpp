#include "vkml/ops/fake_quantize.h"

#include <limits>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/fake_quantize_push.h"

namespace vkml::ops {

namespace {

using ApplyPush = fake_quantize_detail::ApplyPush;
using QParamsPush = fake_quantize_detail::QParamsPush;

void check_range(int64_t quant_min, int64_t quant_max) {
  constexpr int64_t lo = std::numeric_limits<int32_t>::min();
  constexpr int64_t hi = std::numeric_limits<int32_t>::max();
  VKML_CHECK_ARG(quant_min >= lo && quant_max <= hi,
                 "fake_quantize: quant_min and quant_max must fit in 32 bits on vkml");
}

void dispatch_qparams(Device& dev, const QParamsPush& p, int64_t channels, const Access& access) {
  if (channels == 0) return;
  VkPipeline pipeline =
      dev.pipelines().get(dev.info().supports_fp64 ? Shader::fake_quantize_qparams_f64
                                                   : Shader::fake_quantize_qparams_f32);
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(channels), FAKE_QUANTIZE_WG, &access);
}

}  // namespace

void fake_quantize(Device& dev, DType t, uint64_t src, uint64_t dst, uint64_t mask, int64_t numel,
                   const FakeQuantParams& q, int64_t quant_min, int64_t quant_max,
                   uint64_t enabled) {
  check_float_dtype(dev, t, "fake_quantize");
  check_range(quant_min, quant_max);
  if (numel == 0) return;
  check_32bit_indexing(numel, numel, "fake_quantize");
  VKML_CHECK_ARG(q.channels > 0 && q.channel_stride > 0, "fake_quantize: bad channel layout");
  ApplyPush p{.src = src,
              .dst = dst,
              .mask = mask,
              .scale = q.scale,
              .inv_scale = q.inv_scale,
              .zero_point = q.zero_point,
              .enabled = enabled,
              .errors = q.check_zero_points ? dev.errors().address() : 0,
              .scale_value = q.scale_value,
              .inv_scale_value = q.inv_scale_value,
              .zero_point_value = q.zero_point_value,
              .quant_min = int32_t(quant_min),
              .quant_max = int32_t(quant_max),
              .numel = uint32_t(numel),
              .channels = uint32_t(q.channels),
              .channel_stride = uint32_t(q.channel_stride)};
  Access access;
  access.read(span_elems(src, numel, itemsize(t)));
  access.write(span_elems(dst, numel, itemsize(t)));
  access.write(span_elems(mask, numel, 1));
  if (q.scale) {
    access.read(span_elems(q.scale, q.channels, sizeof(float)));
    access.read(span_elems(q.inv_scale, q.channels, sizeof(float)));
    access.read(span_elems(q.zero_point, q.channels, sizeof(int32_t)));
  }
  if (enabled) access.read(span_elems(enabled, 1, sizeof(int64_t)));
  dispatch_1d(dev, dev.pipelines().get(shaders::fake_quantize(t)), &p, sizeof(p), uint64_t(numel),
              FAKE_QUANTIZE_WG, &access);
}

void fake_quantize_reciprocals(Device& dev, uint64_t scale, uint64_t inv_scale, int64_t channels) {
  QParamsPush p{};
  p.scale = scale;
  p.inv_scale = inv_scale;
  p.channels = uint32_t(channels);
  p.mode = FAKE_QUANTIZE_RECIPROCALS;
  Access access;
  access.read(span_elems(scale, channels, sizeof(float)));
  access.write(span_elems(inv_scale, channels, sizeof(float)));
  dispatch_qparams(dev, p, channels, access);
}

void fake_quantize_observe(Device& dev, const FakeQuantObserver& o, uint64_t scale,
                           uint64_t inv_scale, uint64_t zero_point, int64_t channels,
                           int64_t quant_min, int64_t quant_max) {
  check_range(quant_min, quant_max);
  QParamsPush p{.x_min = o.x_min,
                .x_max = o.x_max,
                .running_min = o.running_min,
                .running_max = o.running_max,
                .scale = scale,
                .inv_scale = inv_scale,
                .zero_point = zero_point,
                .observer_on = o.observer_on,
                .fake_quant_on = o.fake_quant_on,
                .averaging_const = o.averaging_const,
                .quant_min = int32_t(quant_min),
                .quant_max = int32_t(quant_max),
                .symmetric = o.symmetric ? 1u : 0u,
                .channels = uint32_t(channels),
                .mode = FAKE_QUANTIZE_OBSERVE_AND_CHOOSE};
  Access access;
  access.read(span_elems(o.x_min, channels, sizeof(float)));
  access.read(span_elems(o.x_max, channels, sizeof(float)));
  access.read(span_elems(o.observer_on, 1, sizeof(int64_t)));
  access.read(span_elems(o.fake_quant_on, 1, sizeof(int64_t)));
  access.update(span_elems(o.running_min, channels, sizeof(float)));
  access.update(span_elems(o.running_max, channels, sizeof(float)));
  access.update(span_elems(scale, channels, sizeof(float)));  // kept when fake quant is off
  access.update(span_elems(inv_scale, channels, sizeof(float)));
  access.update(span_elems(zero_point, channels, sizeof(int32_t)));
  dispatch_qparams(dev, p, channels, access);
}

}  // namespace vkml::ops
