#version 450
// Resampling of a contiguous float32 [outer, in, inner] tensor along its middle dim
// to [outer, out, inner]: one separable pass of linear / trilinear, bicubic and
// antialiased interpolation (PyTorch's CPU index and weight rules, float math).
// The bwd variant is the adjoint: grad_out * weight is scattered into a zeroed
// float32 grad_in with compare-and-swap adds (only 32-bit integer atomics needed).
//! variant fwd
//! variant bwd -DBWD
#include "common.glsl"

#include "interp_push.h"

const uint WG = INTERP_WG;
layout(local_size_x = WG) in;

float cubic1(float x, float a) { return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0; }
float cubic2(float x, float a) { return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a; }

float aa_filter(float x) {
  x = abs(x);
  if (pc.mode == INTERP_AA_LINEAR) return x < 1.0 ? 1.0 - x : 0.0;
  if (x < 1.0) return cubic1(x, -0.5);
  return x < 2.0 ? cubic2(x, -0.5) : 0.0;
}

#ifdef BWD
#include "atomic_float_add.glsl"
#define atomic_add(off, v) atomic_add_f32(pc.dst, off, v)
#endif

// Forward accumulates src[k] * w into acc; bwd scatters g * w to k.
float acc = 0.0;
float g = 0.0;
uint base = 0u;
void tap(uint k, float w) {
  uint off = base + k * pc.inner;
#ifdef BWD
  if (w != 0.0) atomic_add(off, g * w);
#else
  acc += BufF32(pc.src).v[off] * w;
#endif
}

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  uint i = t % pc.inner;
  uint q = t / pc.inner;
  uint o = q % pc.out_size;
  uint b = q / pc.out_size;
  base = b * pc.in_size * pc.inner + i;
#ifdef BWD
  g = BufF32(pc.src).v[t];
#endif
  bool align = pc.align_corners != 0u;
  uint last = pc.in_size - 1u;
  if (pc.mode == INTERP_LINEAR) {
    float real = align ? pc.scale * float(o) : max(pc.scale * (float(o) + 0.5) - 0.5, 0.0);
    uint i0 = min(uint(real), last);
    float l1 = clamp(real - float(i0), 0.0, 1.0);
    if (pc.in_size == pc.out_size) {  // the CPU's identity shortcut
      i0 = o;
      l1 = 0.0;
    }
    uint i1 = i0 + (i0 < last ? 1u : 0u);
    tap(i0, 1.0 - l1);
    tap(i1, l1);
  } else if (pc.mode == INTERP_CUBIC) {
    float real = align ? pc.scale * float(o) : pc.scale * (float(o) + 0.5) - 0.5;
    int i0 = min(int(floor(real)), int(last));
    float x = clamp(real - float(i0), 0.0, 1.0);
    const float A = -0.75;
    float w[4] = float[4](cubic2(x + 1.0, A), cubic1(x, A), cubic1(1.0 - x, A),
                          cubic2(2.0 - x, A));
    for (int k = 0; k < 4; ++k) tap(uint(clamp(i0 - 1 + k, 0, int(last))), w[k]);
  } else {
    float center = pc.scale * (float(o) + 0.5);
    float invscale = pc.scale >= 1.0 ? 1.0 / pc.scale : 1.0;
    int xmin = max(int(center - pc.support + 0.5), 0);
    int xmax = min(int(center + pc.support + 0.5), int(pc.in_size));
    float total = 0.0;
    for (int j = xmin; j < xmax; ++j) total += aa_filter((float(j) - center + 0.5) * invscale);
    float norm = total != 0.0 ? 1.0 / total : 0.0;
    for (int j = xmin; j < xmax; ++j)
      tap(uint(j), aa_filter((float(j) - center + 0.5) * invscale) * norm);
  }
#ifndef BWD
  BufF32(pc.dst).v[t] = acc;
#endif
}
