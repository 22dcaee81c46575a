#version 450
// Batch / layer / group normalisation, forward and backward; fp32 math. x, y, gy and
// gx have the storage dtype, everything per statistic or per channel is fp32.
//
// The tensor is seen as contiguous [outer, C, inner]. Element e has its statistic
// (mean, rstd) at (e / sdiv) % smod and its affine parameter (w, b) at (e / adiv) % amod,
// which covers batch norm (both per channel), layer norm (statistic per row, affine
// per column) and group norm (statistic per (n, group), affine per channel).
//
// Specialization constants: 0 = mode, 1 = workgroup size.
//   mode 0, statistics: one workgroup per c reduces over (outer, inner):
//           mean[c], rstd[c] = 1 / sqrt(var + eps), sa[c] = biased var (if sa != 0)
//   mode 1, backward sums: one workgroup per c: sa[c] = sum(gy * w'), sb[c] =
//           sum(gy * w' * xhat), w' = w[aff] (1 if w == 0), xhat = (x - mean) * rstd
//   mode 2, forward: y = (x - mean) * rstd * w + b (w, b optional)
//   mode 3, data grad: gx = rstd * (gy w' - sa / count - xhat * sb / count) (training),
//           gx = rstd * gy w' when sa == 0 (statistics were constants)
//   mode 4, rows forward: outer == 1 and each c a row of `inner` contiguous elements
//           (layer and group norm): one workgroup per row computes mean and rstd and
//           writes y, reading x once (kept in registers up to R * WG elements)
//   mode 5, rows data grad: per row, the sums of mode 1 and gx of mode 3 in one pass
// Modes 0 and 1 split over `parts` workgroups per c where one workgroup per c would
// leave a GPU mostly idle (batch norm's few channels of many elements). Each part
// reduces a contiguous range of (outer, inner) into fp32 scratch at pc.part, and a
// thread per c adds the parts in order (deterministic):
//   mode 6: part sums of x; mode 7: the mean from those, then part sums of squared
//           deviations (two passes, as mode 0); mode 8: mean, rstd and variance
//   mode 9: part sums of mode 1's two sums; mode 10: sa, sb
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "float_store.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 64;

#include "norm_push.h"

float ld(uint64_t p, uint off) { return LD(p, off); }
float ldf(uint64_t p, uint off) { return BufF32(p).v[off]; }
uint stat_of(uint e) { return (e / pc.sdiv) % pc.smod; }
uint aff_of(uint e) { return (e / pc.adiv) % pc.amod; }

shared float s_a[WG];
shared float s_b[WG];

// Sums a and b over the workgroup; every thread gets the totals.
void reduce2(inout float a, inout float b) {
  uint tid = gl_LocalInvocationID.x;
  s_a[tid] = a;
  s_b[tid] = b;
  barrier();
  for (uint step = WG / 2; step > 0; step >>= 1) {
    if (tid < step) {
      s_a[tid] += s_a[tid + step];
      s_b[tid] += s_b[tid + step];
    }
    barrier();
  }
  a = s_a[0];
  b = s_b[0];
  barrier();
}

const uint R = NORM_ROW_REGISTERS;

void store_y(uint e, float xhat) {
  uint af = aff_of(e);
  if (pc.w != 0) xhat *= ldf(pc.w, af);
  if (pc.b != 0) xhat += ldf(pc.b, af);
  STORE(pc.dst, e, xhat);
}

void rows_forward(uint row) {
  uint tid = gl_LocalInvocationID.x, k = pc.inner, base = row * k;
  float v[R];
  float s = 0.0, unused = 0.0;
  for (uint r = 0u; r < R; ++r) {
    uint j = tid + r * WG;
    v[r] = j < k ? ld(pc.x, base + j) : 0.0;
    s += v[r];
  }
  for (uint j = tid + R * WG; j < k; j += WG) s += ld(pc.x, base + j);
  reduce2(s, unused);
  float m = s / float(k);
  // Squared deviations from the mean: two passes, as mode 0, for accuracy.
  float q = 0.0;
  for (uint r = 0u; r < R; ++r) {
    float d = tid + r * WG < k ? v[r] - m : 0.0;
    q += d * d;
  }
  for (uint j = tid + R * WG; j < k; j += WG) {
    float d = ld(pc.x, base + j) - m;
    q += d * d;
  }
  reduce2(q, unused);
  float rs = inversesqrt(q / float(k) + pc.eps);
  if (tid == 0u) {
    BufF32(pc.mean).v[row] = m;
    BufF32(pc.rstd).v[row] = rs;
  }
  // Static loops over the registers (so they stay registers), then the rest.
  for (uint r = 0u; r < R; ++r) {
    uint j = tid + r * WG;
    if (j < k) store_y(base + j, (v[r] - m) * rs);
  }
  for (uint j = tid + R * WG; j < k; j += WG) store_y(base + j, (ld(pc.x, base + j) - m) * rs);
}

float w_of(uint e) { return pc.w != 0 ? ldf(pc.w, aff_of(e)) : 1.0; }

void rows_data_grad(uint row) {
  uint tid = gl_LocalInvocationID.x, k = pc.inner, base = row * k;
  float m = ldf(pc.mean, row), rs = ldf(pc.rstd, row);
  float g[R], xh[R];
  float a = 0.0, b = 0.0;
  for (uint r = 0u; r < R; ++r) {
    uint j = tid + r * WG;
    g[r] = j < k ? ld(pc.gy, base + j) * w_of(base + j) : 0.0;
    xh[r] = j < k ? (ld(pc.x, base + j) - m) * rs : 0.0;
    a += g[r];
    b += g[r] * xh[r];
  }
  for (uint j = tid + R * WG; j < k; j += WG) {
    float gj = ld(pc.gy, base + j) * w_of(base + j);
    a += gj;
    b += gj * (ld(pc.x, base + j) - m) * rs;
  }
  reduce2(a, b);
  for (uint r = 0u; r < R; ++r) {
    uint j = tid + r * WG;
    if (j < k) STORE(pc.dst, base + j, rs * (g[r] - (a + xh[r] * b) / pc.count));
  }
  for (uint j = tid + R * WG; j < k; j += WG) {
    float gj = ld(pc.gy, base + j) * w_of(base + j);
    float xj = (ld(pc.x, base + j) - m) * rs;
    STORE(pc.dst, base + j, rs * (gj - (a + xj * b) / pc.count));
  }
}

// This part's range of the (outer, inner) elements of channel ch.
void part_range(uint wid, out uint ch, out uint lo, out uint hi) {
  ch = wid / pc.parts;
  uint total = pc.outer * pc.inner, per = (total + pc.parts - 1u) / pc.parts;
  lo = min((wid % pc.parts) * per, total);
  hi = min(lo + per, total);
}

uint element(uint ch, uint j) {
  uint o = j / pc.inner;
  return (o * pc.c + ch) * pc.inner + (j - o * pc.inner);
}

// The sum of scratch row `row` (c * parts floats from row * c * parts) for channel ch.
float sum_parts(uint row, uint ch) {
  BufF32 part = BufF32(pc.part);
  float s = 0.0;
  for (uint p = 0u; p < pc.parts; ++p) s += part.v[(row * pc.c + ch) * pc.parts + p];
  return s;
}

void split_parts(uint wid) {
  uint ch, lo, hi;
  part_range(wid, ch, lo, hi);
  uint tid = gl_LocalInvocationID.x;
  float a = 0.0, b = 0.0;
  if (MODE == NORM_PART_SUMS) {
    for (uint j = lo + tid; j < hi; j += WG) a += ld(pc.x, element(ch, j));
  } else if (MODE == NORM_PART_DEVIATIONS) {
    float m = sum_parts(0u, ch) / float(pc.outer * pc.inner);
    for (uint j = lo + tid; j < hi; j += WG) {
      float d = ld(pc.x, element(ch, j)) - m;
      b += d * d;
    }
  } else {  // NORM_PART_BACKWARD_SUMS
    for (uint j = lo + tid; j < hi; j += WG) {
      uint e = element(ch, j), st = stat_of(e);
      float g = ld(pc.gy, e) * (pc.w != 0 ? ldf(pc.w, aff_of(e)) : 1.0);
      float xh = (ld(pc.x, e) - ldf(pc.mean, st)) * ldf(pc.rstd, st);
      a += g;
      b += g * xh;
    }
  }
  reduce2(a, b);
  if (tid == 0u) {
    BufF32 part = BufF32(pc.part);
    if (MODE != NORM_PART_DEVIATIONS) part.v[wid] = a;
    if (MODE != NORM_PART_SUMS) part.v[pc.c * pc.parts + wid] = b;
  }
}

void combine_parts(uint ch) {
  if (MODE == NORM_COMBINE_STATISTICS) {
    float total = float(pc.outer * pc.inner);
    float var = sum_parts(1u, ch) / total;
    BufF32(pc.mean).v[ch] = sum_parts(0u, ch) / total;
    BufF32(pc.rstd).v[ch] = inversesqrt(var + pc.eps);
    if (pc.sa != 0) BufF32(pc.sa).v[ch] = var;
  } else {  // NORM_COMBINE_BACKWARD_SUMS
    BufF32(pc.sa).v[ch] = sum_parts(0u, ch);
    BufF32(pc.sb).v[ch] = sum_parts(1u, ch);
  }
}

void main() {
  if (MODE >= NORM_PART_SUMS) {
    uint wid = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (MODE == NORM_COMBINE_STATISTICS || MODE == NORM_COMBINE_BACKWARD_SUMS) {
      uint ch = wid * WG + gl_LocalInvocationID.x;
      if (ch < pc.c) combine_parts(ch);
    } else if (wid < pc.c * pc.parts) {  // uniform across the workgroup
      split_parts(wid);
    }
    return;
  }
  if (MODE >= NORM_ROWS_FORWARD) {
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.c) return;  // uniform across the workgroup
    if (MODE == NORM_ROWS_FORWARD) rows_forward(row);
    else rows_data_grad(row);
    return;
  }
  if (MODE <= NORM_BACKWARD_SUMS) {
    uint ch = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (ch >= pc.c) return;  // uniform across the workgroup
    uint tid = gl_LocalInvocationID.x;
    uint total = pc.outer * pc.inner;
    if (MODE == NORM_STATISTICS) {
      // Two passes (mean, then squared deviations) for accuracy.
      float s = 0.0, unused = 0.0;
      for (uint j = tid; j < total; j += WG) {
        uint o = j / pc.inner, i = j - o * pc.inner;
        s += ld(pc.x, (o * pc.c + ch) * pc.inner + i);
      }
      reduce2(s, unused);
      float m = s / float(total);
      float v = 0.0;
      for (uint j = tid; j < total; j += WG) {
        uint o = j / pc.inner, i = j - o * pc.inner;
        float d = ld(pc.x, (o * pc.c + ch) * pc.inner + i) - m;
        v += d * d;
      }
      reduce2(v, unused);
      if (tid == 0) {
        float var = v / float(total);
        BufF32(pc.mean).v[ch] = m;
        BufF32(pc.rstd).v[ch] = inversesqrt(var + pc.eps);
        if (pc.sa != 0) BufF32(pc.sa).v[ch] = var;
      }
    } else {
      float a = 0.0, b = 0.0;
      for (uint j = tid; j < total; j += WG) {
        uint o = j / pc.inner, i = j - o * pc.inner;
        uint e = (o * pc.c + ch) * pc.inner + i;
        uint st = stat_of(e);
        float g = ld(pc.gy, e) * (pc.w != 0 ? ldf(pc.w, aff_of(e)) : 1.0);
        float xh = (ld(pc.x, e) - ldf(pc.mean, st)) * ldf(pc.rstd, st);
        a += g;
        b += g * xh;
      }
      reduce2(a, b);
      if (tid == 0) {
        BufF32(pc.sa).v[ch] = a;
        BufF32(pc.sb).v[ch] = b;
      }
    }
  } else {
    uint e = linear_id();
    if (e >= pc.outer * pc.c * pc.inner) return;
    uint st = stat_of(e), af = aff_of(e);
    float xh = (ld(pc.x, e) - ldf(pc.mean, st)) * ldf(pc.rstd, st);
    if (MODE == NORM_FORWARD) {
      float v = xh;
      if (pc.w != 0) v *= ldf(pc.w, af);
      if (pc.b != 0) v += ldf(pc.b, af);
      STORE(pc.dst, e, v);
    } else {
      float g = ld(pc.gy, e) * (pc.w != 0 ? ldf(pc.w, af) : 1.0);
      float r = ldf(pc.rstd, st);
      if (pc.sa != 0) g -= (ldf(pc.sa, st) + xh * ldf(pc.sb, st)) / pc.count;
      STORE(pc.dst, e, r * g);
    }
  }
}
