#version 450
// unique over sorted keys (from sort.comp) in four passes (mode = spec constant 0):
//   0: ids[i] = 1 where a group starts (i == 0 or key differs from its left neighbour;
//      NaN != NaN, so NaNs stay distinct as on the CPU);
//   1: inclusive prefix sum of ids in place, by one workgroup in chunks of WG;
//   2: per element: group g = ids[i] - 1; group starts write the unique key and
//      their position; inverse[perm[i]] = g;
//   3: counts[g] = start[g + 1] - start[g] (n for the last group).
//! dtypes f32 i64
#include "common.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 256;

#ifdef ST_F32
#define KT float
#define KBUF BufF32
#else
#define KT int64_t
#define KBUF BufI64
#endif

#include "unique_push.h"

shared uint s_sum[WG];

bool starts_group(uint i) {
  return i == 0u || KBUF(pc.keys).v[i] != KBUF(pc.keys).v[i - 1u];
}

void main() {
  if (MODE == UNIQUE_PREFIX_SUM) {
    uint tid = gl_LocalInvocationID.x;
    uint carry = 0u;
    for (uint base = 0u; base < pc.n; base += WG) {
      uint i = base + tid;
      uint v = i < pc.n ? BufU32(pc.ids).v[i] : 0u;
      s_sum[tid] = v;
      barrier();
      for (uint off = 1u; off < WG; off <<= 1) {  // Hillis-Steele inclusive scan
        uint add = tid >= off ? s_sum[tid - off] : 0u;
        barrier();
        s_sum[tid] += add;
        barrier();
      }
      if (i < pc.n) BufU32(pc.ids).v[i] = s_sum[tid] + carry;
      carry += s_sum[WG - 1u];
      barrier();
    }
    return;
  }
  uint i = linear_id();
  if (MODE == UNIQUE_GROUP_STARTS) {
    if (i < pc.n) BufU32(pc.ids).v[i] = starts_group(i) ? 1u : 0u;
  } else if (MODE == UNIQUE_WRITE) {
    if (i >= pc.n) return;
    uint g = BufU32(pc.ids).v[i] - 1u;
    if (starts_group(i)) {
      KBUF(pc.uniq).v[g] = KBUF(pc.keys).v[i];
      BufI64(pc.start).v[g] = int64_t(i);
    }
    if (pc.inverse != 0ul) BufI64(pc.inverse).v[uint(BufI64(pc.perm).v[i])] = int64_t(g);
  } else {  // UNIQUE_COUNTS
    if (i >= pc.count) return;
    int64_t end = i + 1u < pc.count ? BufI64(pc.start).v[i + 1u] : int64_t(pc.n);
    BufI64(pc.counts).v[i] = end - BufI64(pc.start).v[i];
  }
}
