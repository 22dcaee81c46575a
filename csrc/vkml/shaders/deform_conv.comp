#version 450
// torchvision::deform_conv2d's sampling steps, over one chunk of images; the matrix
// products between them are GEMMs on the host side (ops_deform_conv.cpp). Each kernel
// tap (i, j) of output (b, y, x) samples its input channel at the tap's place moved by
// its offset (dy, dx), bilinearly, and scales the sample by its mask. A sample at or
// beyond one pixel outside the plane is 0; corners outside the plane count as 0
// (torchvision's rules).
//   im2col: columns[c, i, j][b, y, x] = mask * sample (one thread per column element).
//   col2im: grad_input += each column gradient * mask, spread over the sample's corners
//           with compare-and-swap adds (64-bit for f64: shaderBufferInt64Atomics).
//   coord:  one thread per offset element sums, over the channels of its offset group,
//           column gradient * mask * the sample's derivative along its direction; the dy
//           threads also write the mask's gradient (column gradient * sample).
//! variant im2col
//! variant col2im -DCOL2IM
//! variant coord -DCOORD
//! variant im2col_f64 -DF64
//! variant col2im_f64 -DCOL2IM -DF64
//! variant coord_f64 -DCOORD -DF64
#if defined(F64) && defined(COL2IM)
#extension GL_EXT_shader_atomic_int64 : require
#define ATOMIC_ADD_F64
#endif
#include "common.glsl"

#include "deform_conv_push.h"

#ifdef F64
#define R double
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufR { double v[]; };
#else
#define R float
#define BufR BufF32
#endif
#ifdef COL2IM
#include "atomic_float_add.glsl"
#endif

const uint WG = DEFORM_CONV_WG;
layout(local_size_x = WG) in;

// Where tap k of output position pos (y * out_w + x) of image b in offset group og
// samples, and its mask.
struct Tap {
  R y, x, m;
};
Tap tap(uint b, uint og, uint k, uint pos) {
  uint kk = pc.kh * pc.kw, l = pc.out_h * pc.out_w;
  uint i = k / pc.kw, j = k - i * pc.kw;
  uint oy = pos / pc.out_w, ox = pos - oy * pc.out_w;
  uint at = ((b * pc.offset_groups + og) * 2u * kk + 2u * k) * l + pos;
  BufR off = BufR(pc.offset);
  Tap t;
  t.y = R(int(oy * pc.stride_h + i * pc.dil_h) - pc.pad_h) + off.v[at];
  t.x = R(int(ox * pc.stride_w + j * pc.dil_w) - pc.pad_w) + off.v[at + l];
  t.m = pc.use_mask != 0u ? BufR(pc.mask).v[((b * pc.offset_groups + og) * kk + k) * l + pos]
                          : R(1.0);
  return t;
}

bool outside(R y, R x) {
  return y <= R(-1.0) || R(pc.h) <= y || x <= R(-1.0) || R(pc.w) <= x;
}

// The value at (y, x) of the plane at `plane` (an element offset into pc.image), with
// corners outside the plane read as 0; `coordinate` 1 or 2 gives instead the derivative
// along y or x.
R bilinear(uint plane, R y, R x, int coordinate) {
  int height = int(pc.h), width = int(pc.w);
  int y_lo = int(floor(y)), x_lo = int(floor(x));
  int y_hi = y_lo + 1, x_hi = x_lo + 1;
  R ly = y - R(y_lo), lx = x - R(x_lo);
  BufR src = BufR(pc.image);
  R v1 = R(0.0), v2 = R(0.0), v3 = R(0.0), v4 = R(0.0);
  bool y_lo_in = y_lo >= 0 && y_lo < height, y_hi_in = y_hi >= 0 && y_hi < height;
  bool x_lo_in = x_lo >= 0 && x_lo < width, x_hi_in = x_hi >= 0 && x_hi < width;
  if (y_lo_in && x_lo_in) v1 = src.v[plane + uint(y_lo * width + x_lo)];
  if (y_lo_in && x_hi_in) v2 = src.v[plane + uint(y_lo * width + x_hi)];
  if (y_hi_in && x_lo_in) v3 = src.v[plane + uint(y_hi * width + x_lo)];
  if (y_hi_in && x_hi_in) v4 = src.v[plane + uint(y_hi * width + x_hi)];
  if (coordinate == 1) return lx * (v4 - v2) + (R(1.0) - lx) * (v3 - v1);
  if (coordinate == 2) return ly * (v4 - v3) + (R(1.0) - ly) * (v2 - v1);
  return (R(1.0) - ly) * ((R(1.0) - lx) * v1 + lx * v2) + ly * ((R(1.0) - lx) * v3 + lx * v4);
}

void main() {
  uint t = linear_id();
  uint kk = pc.kh * pc.kw, l = pc.out_h * pc.out_w, plane_size = pc.h * pc.w;
  uint channels_per_group = pc.c / pc.offset_groups;
#ifdef COORD
  uint per_image = pc.offset_groups * 2u * kk * l;
  if (t >= pc.images * per_image) return;
  uint b = t / per_image;
  uint rest = t - b * per_image;
  uint oc = rest / l, pos = rest - oc * l;
  uint og = oc / (2u * kk);
  uint k = (oc - og * 2u * kk) / 2u;
  bool along_y = (oc & 1u) == 0u;
  Tap s = tap(b, og, k, pos);
  BufR cols = BufR(pc.columns);
  R grad = R(0.0), grad_m = R(0.0);
  for (uint c = og * channels_per_group; c < (og + 1u) * channels_per_group; ++c) {
    R g = cols.v[((c * kk + k) * pc.images + b) * l + pos];
    uint plane = (b * pc.c + c) * plane_size;
    grad += s.m * g * bilinear(plane, s.y, s.x, along_y ? 1 : 2);
    if (along_y && pc.use_mask != 0u && !outside(s.y, s.x))
      grad_m += g * bilinear(plane, s.y, s.x, 0);
  }
  BufR(pc.grad_offset).v[t] = grad;
  if (along_y && pc.use_mask != 0u)
    BufR(pc.grad_mask).v[((b * pc.offset_groups + og) * kk + k) * l + pos] = grad_m;
#else
  uint cols_per_row = pc.images * l;
  if (t >= pc.c * kk * cols_per_row) return;
  uint row = t / cols_per_row;
  uint col = t - row * cols_per_row;
  uint c = row / kk, k = row - c * kk;
  uint b = col / l, pos = col - b * l;
  Tap s = tap(b, c / channels_per_group, k, pos);
  uint plane = (b * pc.c + c) * plane_size;
#ifdef COL2IM
  R g = BufR(pc.columns).v[t] * s.m;
  if (g == R(0.0) || outside(s.y, s.x)) return;
  int height = int(pc.h), width = int(pc.w);
  int y_lo = int(floor(s.y)), x_lo = int(floor(s.x));
  R ly = s.y - R(y_lo), lx = s.x - R(x_lo);
  for (int dy = 0; dy < 2; ++dy) {
    int yy = y_lo + dy;
    if (yy < 0 || yy >= height) continue;
    R wy = dy == 0 ? R(1.0) - ly : ly;
    for (int dx = 0; dx < 2; ++dx) {
      int xx = x_lo + dx;
      if (xx < 0 || xx >= width) continue;
      R wgt = wy * (dx == 0 ? R(1.0) - lx : lx);
#ifdef F64
      atomic_add_f64(pc.image, plane + uint(yy * width + xx), g * wgt);
#else
      atomic_add_f32(pc.image, plane + uint(yy * width + xx), g * wgt);
#endif
    }
  }
#else
  BufR(pc.columns).v[t] = outside(s.y, s.x) ? R(0.0) : s.m * bilinear(plane, s.y, s.x, 0);
#endif
#endif
}
