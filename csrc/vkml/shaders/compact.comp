#version 450
// Stream compaction driven by an inclusive int32 prefix sum of 0/1 flags over
// n elements (element i is selected when its prefix grows by one):
//   mode 0 (nonzero):        dst[(prefix[i] - 1) * ndim + d] = coordinate d of i (int64)
//   mode 1 (masked_select):  dst[prefix[i] - 1] = src[i]
//   mode 2 (masked_scatter): dst[i] = src[prefix[i] - 1]   (dst is updated in place)
// Elements are moved as raw bits; the variant is the element size.
//! variant x8 -DW8
//! variant x16 -DW16 -DNEED_F16
//! variant x32 -DW32
//! variant x64 -DW64
#include "common.glsl"

layout(constant_id = 0) const int MODE = 0;

#if defined(W8)
#define BUF BufU8
#elif defined(W16)
#define BUF BufU16
#elif defined(W32)
#define BUF BufU32
#else
#define BUF BufI64
#endif

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
      BufI64(pc.dst).v[slot * uint(pc.ndim) + uint(d)] = int64_t(r % sz);
      r /= sz;
    }
  } else if (MODE == COMPACT_SELECT) {
    BUF(pc.dst).v[slot] = BUF(pc.src).v[i];
  } else if (slot < pc.limit) {
    BUF(pc.dst).v[i] = BUF(pc.src).v[slot];
  }
}
