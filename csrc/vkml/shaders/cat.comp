#version 450
// Concatenation into a contiguous [outer, total, inner] output in one dispatch:
// a device-side table lists the inputs (address, start along the cat dim, size
// and [outer, dim, inner] strides); each thread finds its input by binary
// search over the starts. Elements move by size: one variant per element size.
//! widths 1 2 4 8
#include "common.glsl"
#include "elem_bytes.glsl"

#include "cat_push.h"

const uint WG = CAT_WG;
layout(local_size_x = WG) in;

layout(buffer_reference, scalar, buffer_reference_align = 8) readonly buffer Table { CatEntry e[]; };

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  uint i = t % pc.inner;
  uint q = t / pc.inner;
  int pos = int(q % pc.total);
  int o = int(q / pc.total);
  Table tab = Table(pc.table);
  uint lo = 0, hi = pc.count - 1;  // last entry with start <= pos
  while (lo < hi) {
    uint mid = (lo + hi + 1) >> 1;
    if (tab.e[mid].start <= pos) lo = mid; else hi = mid - 1;
  }
  CatEntry e = tab.e[lo];
  int off = o * e.stride[0] + (pos - e.start) * e.stride[1] + int(i) * e.stride[2];
  EBUF(pc.dst).v[t] = EBUF(e.address).v[off];
}
