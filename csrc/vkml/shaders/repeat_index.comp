#version 450
// repeat_interleave's index tensor: output j holds the i whose repeat range
// [cum[i] - repeats[i], cum[i]) contains j. Mode (spec constant 0):
//   0: cum[i] = repeats[i] (int64 or int32 in, uint out);
//   1: inclusive prefix sum of cum in place, one workgroup in chunks of WG;
//   2: per output j: binary search for the first i with cum[i] > j.
#include "common.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 256;

#include "repeat_index_push.h"

shared uint s_sum[WG];

void main() {
  if (MODE == REPEAT_INDEX_PREFIX_SUM) {
    uint tid = gl_LocalInvocationID.x;
    uint carry = 0u;
    for (uint base = 0u; base < pc.n; base += WG) {
      uint i = base + tid;
      s_sum[tid] = i < pc.n ? BufU32(pc.cum).v[i] : 0u;
      barrier();
      for (uint off = 1u; off < WG; off <<= 1) {
        uint add = tid >= off ? s_sum[tid - off] : 0u;
        barrier();
        s_sum[tid] += add;
        barrier();
      }
      if (i < pc.n) BufU32(pc.cum).v[i] = s_sum[tid] + carry;
      carry += s_sum[WG - 1u];
      barrier();
    }
    return;
  }
  uint t = linear_id();
  if (MODE == REPEAT_INDEX_COUNTS) {
    if (t >= pc.n) return;
    BufU32(pc.cum).v[t] =
        pc.i32 != 0u ? uint(BufI32(pc.repeats).v[t]) : uint(BufI64(pc.repeats).v[t]);
  } else {  // REPEAT_INDEX_SEARCH
    if (t >= pc.total) return;
    uint lo = 0u, hi = pc.n;
    while (lo < hi) {
      uint mid = (lo + hi) >> 1;
      if (BufU32(pc.cum).v[mid] > t) hi = mid; else lo = mid + 1u;
    }
    if (pc.i32 != 0u) BufI32(pc.dst).v[t] = int(lo);
    else BufI64(pc.dst).v[t] = int64_t(lo);
  }
}
