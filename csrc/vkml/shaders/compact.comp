#version 450
// Stream compaction driven by an inclusive int32 prefix sum of 0/1 flags over
// n elements (element i is selected when its prefix grows by one):
//   mode 0 (nonzero):        dst[(prefix[i] - 1) * ndim + d] = coordinate d of i (int64)
//   mode 1 (masked_select):  dst[prefix[i] - 1] = src[i]
//   mode 2 (masked_scatter): dst[i] = src[prefix[i] - 1]   (dst is updated in place)
// Elements are moved as raw bits; the variant is the element size.
//! widths 1 2 4 8
#include "common.glsl"

layout(constant_id = 0) const int MODE = 0;

#include "elem_bytes.glsl"

#include "compact_push.h"

const uint WG = COMPACT_WG;
layout(local_size_x = WG) in;

void main() {
  uint i = linear_id();
  if (i >= pc.n) return;
  int p = BufI32(pc.prefix).v[i];
  int before = i == 0u ? 0 : BufI32(pc.prefix).v[i - 1u];
  if (p == before) return;
  uint slot = uint(p - 1);
  if (MODE == COMPACT_COORDINATES) {
    uint r = i;
    for (int d = pc.ndim - 1; d >= 0; --d) {
      uint sz = uint(pc.size[d]);
      BufI64(pc.dst).v[uint(d) * pc.limit + slot] = int64_t(r % sz);
      r /= sz;
    }
  } else if (MODE == COMPACT_SELECT) {
    EBUF(pc.dst).v[slot] = EBUF(pc.src).v[i];
  } else if (slot < pc.limit) {
    EBUF(pc.dst).v[i] = EBUF(pc.src).v[slot];
  }
}
