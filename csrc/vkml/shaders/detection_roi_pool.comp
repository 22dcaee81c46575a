#version 450
// torchvision::roi_pool and its backward (_roi_pool_backward) over a contiguous input
// [batch, c, h, w] and rois [k, 5]. One thread per output element [k, c, ph, pw] takes
// the maximum of its bin and where it was, following torchvision's kernels: the roi's
// corners are rounded to whole pixels (half away from zero) at least one pixel apart,
// bins are cut by floor and ceil and clipped to the plane, an empty bin gives 0 and
// argmax -1. The backward adds each output's gradient at its argmax, with
// compare-and-swap adds (64-bit for f64: shaderBufferInt64Atomics). A roi whose batch
// index is out of range gives zeros and no gradient (torchvision's kernels read out of
// bounds there).
//! variant fwd
//! variant bwd -DBWD
//! variant fwd_f64 -DF64
//! variant bwd_f64 -DBWD -DF64
#if defined(F64) && defined(BWD)
#extension GL_EXT_shader_atomic_int64 : require
#define ATOMIC_ADD_F64
#endif
#include "common.glsl"

#include "detection_roi_pool_push.h"

#ifdef F64
#define R double
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufR { double v[]; };
R spatial_scale() {
  return packDouble2x32(uvec2(uint(pc.scale & 0xffffffffUL), uint(pc.scale >> 32)));
}
#else
#define R float
#define BufR BufF32
R spatial_scale() { return pc.scale_f32; }
#endif
#ifdef BWD
#include "atomic_float_add.glsl"
#endif

const uint WG = DETECTION_ROI_POOL_WG;
layout(local_size_x = WG) in;

// C's round(): halves away from zero (GLSL's round() may round them either way). The
// fraction is exact; adding 0.5 first would round 0.49999997 up.
int round_half_away(R v) {
  R a = abs(v), whole = floor(a);
  if (a - whole >= R(0.5)) whole += R(1.0);
  return int(sign(v) * whole);
}

void main() {
  uint t = linear_id();
  uint per_roi = pc.c * pc.ph * pc.pw;
  if (t >= pc.k * per_roi) return;
  uint r = t / per_roi;
  uint rest = t - r * per_roi;
  uint ch = rest / (pc.ph * pc.pw);
  uint bin = rest - ch * (pc.ph * pc.pw);
  uint py = bin / pc.pw;
  uint px = bin - py * pc.pw;

  BufR rois = BufR(pc.rois);
  R batch_index = rois.v[5 * r];
  bool valid = batch_index >= 0.0 && batch_index < R(pc.batch);
  uint plane = (uint(valid ? batch_index : 0.0) * pc.c + ch) * pc.h * pc.w;
#ifdef BWD
  int at = BufI32(pc.argmax).v[t];
  if (!valid || at < 0) return;
#ifdef F64
  atomic_add_f64(pc.image, plane + uint(at), BufR(pc.pooled).v[t]);
#else
  atomic_add_f32(pc.image, plane + uint(at), BufR(pc.pooled).v[t]);
#endif
#else
  R scale = spatial_scale();
  int start_w = round_half_away(rois.v[5 * r + 1] * scale);
  int start_h = round_half_away(rois.v[5 * r + 2] * scale);
  int roi_w = max(round_half_away(rois.v[5 * r + 3] * scale) - start_w + 1, 1);
  int roi_h = max(round_half_away(rois.v[5 * r + 4] * scale) - start_h + 1, 1);
  R bin_h = R(roi_h) / R(pc.ph), bin_w = R(roi_w) / R(pc.pw);
  int height = int(pc.h), width = int(pc.w);
  int h0 = clamp(int(floor(R(py) * bin_h)) + start_h, 0, height);
  int h1 = clamp(int(ceil(R(py + 1u) * bin_h)) + start_h, 0, height);
  int w0 = clamp(int(floor(R(px) * bin_w)) + start_w, 0, width);
  int w1 = clamp(int(ceil(R(px + 1u) * bin_w)) + start_w, 0, width);
  bool empty = h1 <= h0 || w1 <= w0 || !valid;
  R best = empty ? R(0.0) : R(-3.402823466e38);  // -FLT_MAX, in both dtypes as torchvision
  int at = -1;
  BufR src = BufR(pc.image);
  for (int y = h0; valid && y < h1; ++y) {
    for (int x = w0; x < w1; ++x) {
      R v = src.v[plane + uint(y * width + x)];
      if (v > best) {
        best = v;
        at = y * width + x;
      }
    }
  }
  BufR(pc.pooled).v[t] = best;
  BufI32(pc.argmax).v[t] = at;
#endif
}
