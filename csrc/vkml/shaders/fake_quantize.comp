#version 450
// Fake quantization (quantization-aware training): each element is rounded to its
// channel's integer grid and back, and the mask records which elements fell inside
// [quant_min, quant_max] (the backward passes gradients only there). The arithmetic is
// PyTorch's CPU kernel's, in float: zp + nearbyint(x * inv_scale), clamped, minus zp,
// times scale. A NaN lands on quant_min, as the CPU's (and CUDA's) integer conversion
// puts it; infinities saturate, as CUDA's does.
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "float_store.glsl"
#include "device_error.glsl"

#include "fake_quantize_push.h"

const uint WG = FAKE_QUANTIZE_WG;
layout(local_size_x = WG) in;

void main() {
  uint i = linear_id();
  if (i >= pc.numel) return;
  float x = LD(pc.src, i);
  if (pc.enabled != 0ul && BufI64(pc.enabled).v[0] == 0l) {
    STORE(pc.dst, i, x);
    BufU8(pc.mask).v[i] = uint8_t(1);
    return;
  }
  float scale = pc.scale_value, inv_scale = pc.inv_scale_value;
  int zp = pc.zero_point_value;
  if (pc.scale != 0ul) {
    uint c = (i / pc.channel_stride) % pc.channels;
    scale = BufF32(pc.scale).v[c];
    inv_scale = BufF32(pc.inv_scale).v[c];
    zp = BufI32(pc.zero_point).v[c];
    if (zp < pc.quant_min || zp > pc.quant_max)
      report_device_error(pc.errors, DEVICE_ERROR_FAKE_QUANT_ZERO_POINT, zp, 0, 0u);
  }
  float q = float(zp) + roundEven(x * inv_scale);
  float lo = float(pc.quant_min), hi = float(pc.quant_max);
  bool inside = q >= lo && q <= hi;  // false for NaN
  float clamped = isnan(q) ? lo : min(max(q, lo), hi);
  STORE(pc.dst, i, (clamped - float(zp)) * scale);
  BufU8(pc.mask).v[i] = uint8_t(inside ? 1 : 0);
}
