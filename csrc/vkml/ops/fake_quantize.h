#pragma once
// Fake quantization for quantization-aware training: per-tensor and per-channel
// round trips through an integer grid with the gradient mask, and the fused
// moving-average observer that chooses the grid's scale and zero point on the device.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// Where the scale, 1 / scale and zero point come from: the scalar fields when `scale` is
// 0, else device arrays (float32, float32, int32) of `channels` entries, the channel of
// element i being (i / channel_stride) % channels.
struct FakeQuantParams {
  float scale_value = 1.0f, inv_scale_value = 1.0f;
  int32_t zero_point_value = 0;
  uint64_t scale = 0, inv_scale = 0, zero_point = 0;
  int64_t channels = 1, channel_stride = 1;
  bool check_zero_points = false;  // raise (deferred) for array zero points outside the range
};

// dst (dtype t) and mask (bool) from src (dtype t), all dense with the same strides:
// numel elements from each address. `enabled`: 0, or an int64 flag that, at 0, makes
// this a copy with a full mask. t: float32, float16 or bfloat16.
void fake_quantize(Device& dev, DType t, uint64_t src, uint64_t dst, uint64_t mask, int64_t numel,
                   const FakeQuantParams& q, int64_t quant_min, int64_t quant_max,
                   uint64_t enabled);

// inv_scale[c] = 1 / scale[c], rounded once (float32 arrays of `channels`).
void fake_quantize_reciprocals(Device& dev, uint64_t scale, uint64_t inv_scale, int64_t channels);

struct FakeQuantObserver {
  uint64_t x_min = 0, x_max = 0;                // this step's range, float32 [channels]
  uint64_t running_min = 0, running_max = 0;    // float32 [channels], updated
  uint64_t observer_on = 0, fake_quant_on = 0;  // int64 flags
  float averaging_const = 0.01f;
  bool symmetric = false;
};

// The moving-average observer's step and, where fake_quant_on, the qparams chosen from
// its range into scale, inv_scale (float32) and zero_point (int32) [channels].
void fake_quantize_observe(Device& dev, const FakeQuantObserver& o, uint64_t scale,
                           uint64_t inv_scale, uint64_t zero_point, int64_t channels,
                           int64_t quant_min, int64_t quant_max);

}  // namespace vkml::ops
