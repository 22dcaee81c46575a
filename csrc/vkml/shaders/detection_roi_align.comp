#version 450
// torchvision::roi_align and its backward (_roi_align_backward) over a contiguous
// input [batch, c, h, w] and rois [k, 5]. One thread per output element [k, c, ph, pw]
// averages the bilinear samples of its bin (sampling_ratio per side, or as many as the
// roi's bin spans), following torchvision's kernels: a sample more than one pixel
// outside the plane counts as 0, one within a pixel is clamped to the edge, and
// without `aligned` a roi is at least one pixel wide and high. The backward scatters
// each sample's weighted gradient into grad_input with compare-and-swap adds (64-bit
// for f64: shaderBufferInt64Atomics). A roi whose batch index is out of range gives
// zeros and no gradient (torchvision's kernels read out of bounds there).
//! variant fwd
//! variant bwd -DBWD
//! variant fwd_f64 -DF64
//! variant bwd_f64 -DBWD -DF64
#if defined(F64) && defined(BWD)
#extension GL_EXT_shader_atomic_int64 : require
#define ATOMIC_ADD_F64
#endif
#include "common.glsl"

#include "detection_roi_align_push.h"

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

const uint WG = DETECTION_ROI_ALIGN_WG;
layout(local_size_x = WG) in;

#ifdef BWD
#include "atomic_float_add.glsl"
#ifdef F64
#define atomic_add(off, v) atomic_add_f64(pc.image, off, v)
#else
#define atomic_add(off, v) atomic_add_f32(pc.image, off, v)
#endif
#endif

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
  R scale = spatial_scale();
  R offset = pc.aligned != 0u ? R(0.5) : R(0.0);
  R start_x = rois.v[5 * r + 1] * scale - offset;
  R start_y = rois.v[5 * r + 2] * scale - offset;
  R roi_w = rois.v[5 * r + 3] * scale - offset - start_x;
  R roi_h = rois.v[5 * r + 4] * scale - offset - start_y;
  if (pc.aligned == 0u) {
    roi_w = max(roi_w, R(1.0));
    roi_h = max(roi_h, R(1.0));
  }
  R bin_h = roi_h / R(pc.ph);
  R bin_w = roi_w / R(pc.pw);
  int grid_h = pc.sampling_ratio > 0 ? pc.sampling_ratio : int(ceil(roi_h / R(pc.ph)));
  int grid_w = pc.sampling_ratio > 0 ? pc.sampling_ratio : int(ceil(roi_w / R(pc.pw)));
  R count = R(max(grid_h * grid_w, 1));
  int height = int(pc.h), width = int(pc.w);
  uint plane = (uint(valid ? batch_index : 0.0) * pc.c + ch) * pc.h * pc.w;

#ifdef BWD
  R g = valid ? BufR(pc.pooled).v[t] / count : R(0.0);
  if (g == 0.0) return;
#else
  BufR src = BufR(pc.image);
  R sum = 0.0;
#endif
  for (int iy = 0; valid && iy < grid_h; ++iy) {
    R y0 = start_y + R(py) * bin_h + (R(iy) + 0.5) * bin_h / R(grid_h);
    for (int ix = 0; ix < grid_w; ++ix) {
      R x = start_x + R(px) * bin_w + (R(ix) + 0.5) * bin_w / R(grid_w);
      R y = y0;
      if (y < -1.0 || y > R(height) || x < -1.0 || x > R(width)) continue;
      y = max(y, R(0.0));
      x = max(x, R(0.0));
      int y_lo = int(y), x_lo = int(x), y_hi, x_hi;
      if (y_lo >= height - 1) {
        y_hi = y_lo = height - 1;
        y = R(y_lo);
      } else {
        y_hi = y_lo + 1;
      }
      if (x_lo >= width - 1) {
        x_hi = x_lo = width - 1;
        x = R(x_lo);
      } else {
        x_hi = x_lo + 1;
      }
      R ly = y - R(y_lo), lx = x - R(x_lo);
      R hy = 1.0 - ly, hx = 1.0 - lx;
      uint o1 = plane + uint(y_lo * width + x_lo), o2 = plane + uint(y_lo * width + x_hi);
      uint o3 = plane + uint(y_hi * width + x_lo), o4 = plane + uint(y_hi * width + x_hi);
#ifdef BWD
      atomic_add(o1, g * hy * hx);
      atomic_add(o2, g * hy * lx);
      atomic_add(o3, g * ly * hx);
      atomic_add(o4, g * ly * lx);
#else
      sum += hy * hx * src.v[o1] + hy * lx * src.v[o2] + ly * hx * src.v[o3] + ly * lx * src.v[o4];
#endif
    }
  }
#ifndef BWD
  BufR(pc.pooled).v[t] = valid ? sum / count : R(0.0);
#endif
}
