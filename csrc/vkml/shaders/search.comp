#version 450
// searchsorted / bucketize: one binary search per value in its row of sorted
// boundaries, with the comparisons of PyTorch's CPU kernel (so NaN behaves alike).
// Boundaries: contiguous [rows, m] (rows = 1 broadcasts over all values), optionally
// permuted by an int64 sorter; values: contiguous, per_row values per row.
//! dtypes f32 i64
#include "common.glsl"

#ifdef ST_F32
#define KT float
#define KBUF BufF32
#else
#define KT int64_t
#define KBUF BufI64
#endif

#include "search_push.h"

const uint WG = SEARCH_WG;
layout(local_size_x = WG) in;

KT boundary(uint base, uint i) {
  // An out-of-range sorter entry reads a wrong boundary, never outside the row.
  uint k = pc.sorter != 0ul ? min(uint(BufI64(pc.sorter).v[base + i]), pc.m - 1u) : i;
  return KBUF(pc.boundaries).v[base + k];
}

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  uint base = (t / pc.per_row) * pc.m;
  KT v = KBUF(pc.values).v[t];
  uint lo = 0, hi = pc.m;
  while (lo < hi) {
    uint mid = lo + ((hi - lo) >> 1);
    KT b = boundary(base, mid);
    bool go_right = pc.right != 0u ? !(b > v) : !(b >= v);
    if (go_right) lo = mid + 1; else hi = mid;
  }
  if (pc.out_i32 != 0u) BufI32(pc.dst).v[t] = int(lo);
  else BufI64(pc.dst).v[t] = int64_t(lo);
}
