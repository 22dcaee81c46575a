#version 450
// Bilinear 2-D resampling of a contiguous [planes, ih, iw] tensor to [planes, oh, ow]
// with the source-index rules of PyTorch's CPU kernel (align_corners or half-pixel
// centres; float math). The bwd variant scatters grad_out * weight into a zeroed
// float32 grad_in with compare-and-swap adds (no float atomics needed).
//! dtypes f32 f16 bf16
//! variant bwd -DBWD
#include "common.glsl"
#include "float_store.glsl"

#include "bilinear_push.h"

const uint WG = BILINEAR_WG;
layout(local_size_x = WG) in;

// Source index pair and the weight of the second along one dim.
void source(uint o, uint in_size, float scale, out uint i0, out uint i1, out float l1) {
  float real = pc.align_corners != 0u ? scale * float(o) : scale * (float(o) + 0.5) - 0.5;
  if (pc.align_corners == 0u && real < 0.0) real = 0.0;
  i0 = min(uint(floor(real)), in_size - 1u);
  l1 = clamp(real - float(i0), 0.0, 1.0);
  i1 = i0 + (i0 < in_size - 1u ? 1u : 0u);
}

#ifdef BWD
#include "atomic_float_add.glsl"
#define atomic_add(off, v) atomic_add_f32(pc.dst, off, v)
#endif

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  uint x = t % pc.ow;
  uint q = t / pc.ow;
  uint y = q % pc.oh;
  uint plane = q / pc.oh;
  uint h0, h1, w0, w1;
  float lh, lw;
  source(y, pc.ih, pc.scale_h, h0, h1, lh);
  source(x, pc.iw, pc.scale_w, w0, w1, lw);
  uint base = plane * pc.ih * pc.iw;
#ifdef BWD
  float g = BufF32(pc.src).v[t];
  atomic_add(base + h0 * pc.iw + w0, g * (1.0 - lh) * (1.0 - lw));
  atomic_add(base + h0 * pc.iw + w1, g * (1.0 - lh) * lw);
  atomic_add(base + h1 * pc.iw + w0, g * lh * (1.0 - lw));
  atomic_add(base + h1 * pc.iw + w1, g * lh * lw);
#else
  float top = LD(pc.src, base + h0 * pc.iw + w0) * (1.0 - lw) +
              LD(pc.src, base + h0 * pc.iw + w1) * lw;
  float bottom = LD(pc.src, base + h1 * pc.iw + w0) * (1.0 - lw) +
                 LD(pc.src, base + h1 * pc.iw + w1) * lw;
  STORE(pc.dst, t, top * (1.0 - lh) + bottom * lh);
#endif
}
