#version 450
// The overlap mask of non-maximum suppression (torchvision::nms): for boxes sorted by
// decreasing score, bit j of row i says that box j (j > i) overlaps box i by more than
// the threshold, as intersection over union computed as torchvision's CPU and CUDA
// kernels do (no +1 on widths; a 0 / 0 union is not an overlap). One thread fills one
// 32-bit word of a row. The sweep that keeps a box unless a kept one suppressed it is
// serial; the launcher runs it on the host over the mask, as CUDA's kernel does.
//! variant f32
//! variant f64 -DF64
#include "common.glsl"

#include "detection_nms_push.h"

#ifdef F64
#define R double
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufR { double v[]; };
R threshold() { return packDouble2x32(uvec2(uint(pc.threshold & 0xffffffffUL), uint(pc.threshold >> 32))); }
#else
#define R float
#define BufR BufF32
R threshold() { return pc.threshold_f32; }
#endif

const uint WG = DETECTION_NMS_WG;
layout(local_size_x = WG) in;

void main() {
  uint t = linear_id();
  if (t >= pc.n * pc.words) return;
  uint i = t / pc.words;
  uint word = t - i * pc.words;
  BufR b = BufR(pc.boxes);
  R x1 = b.v[4 * i], y1 = b.v[4 * i + 1], x2 = b.v[4 * i + 2], y2 = b.v[4 * i + 3];
  R area = (x2 - x1) * (y2 - y1);
  R thr = threshold();
  uint bits = 0u;
  uint first = max(word * 32u, i + 1u);
  uint last = min(word * 32u + 32u, pc.n);
  for (uint j = first; j < last; ++j) {
    R u1 = b.v[4 * j], v1 = b.v[4 * j + 1], u2 = b.v[4 * j + 2], v2 = b.v[4 * j + 3];
    R w = max(R(0), min(x2, u2) - max(x1, u1));
    R h = max(R(0), min(y2, v2) - max(y1, v1));
    R inter = w * h;
    R iou = inter / (area + (u2 - u1) * (v2 - v1) - inter);
    if (iou > thr) bits |= 1u << (j - word * 32u);
  }
  BufU32(pc.mask).v[t] = bits;
}
