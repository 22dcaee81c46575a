#version 450
// tril / triu over the last two dims of a [batch, rows, cols] tensor:
// dst[b, r, c] = keep(r, c) ? src[b, r, c] : 0, with arbitrary strides on both
// sides (dst may be src: each element is read and written by one thread).
// Elements move by size, so one variant per element size serves every dtype.
//! widths 1 2 4 8
#include "common.glsl"
#include "elem_bytes.glsl"

#include "tri_push.h"

const uint WG = TRI_WG;
layout(local_size_x = WG) in;

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  int c = int(t % pc.cols);
  uint q = t / pc.cols;
  int r = int(q % pc.rows);
  int b = int(q / pc.rows);
  int d_off = b * pc.dst_stride[0] + r * pc.dst_stride[1] + c * pc.dst_stride[2];
  int s_off = b * pc.src_stride[0] + r * pc.src_stride[1] + c * pc.src_stride[2];
  bool keep = pc.upper != 0 ? c - r >= pc.k : c - r <= pc.k;
  EBUF(pc.dst).v[d_off] = keep ? EBUF(pc.src).v[s_off] : ETYPE(0);
}
