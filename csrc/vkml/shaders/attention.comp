#version 450
// Fused scaled dot-product attention, forward and backward, without materialising the
// [L, S] score matrix: scores live one BR x BR tile at a time in shared memory and the
// softmax is kept online (running row max and sum), as in FlashAttention-2.
//
// Operands are in the storage dtype (q, k, v, o, dO, dq, dk, dv), each either contiguous
// [B, H, rows, dim] or token-major (a flag bit each): row r of head h at
// (b * rows + r) * R + h * dim with R = m * H * dim, m a byte of tm_mult (q, k, v, dO;
// 1 for outputs). That is what a model's x.view(B, L, H, E).transpose(1, 2) gives
// (m = 1), or a slice of a packed qkv projection (m = 3), read in place. lse and
// delta are float32 [BH, L]. The optional additive bias is read through
// (b, h, i, j) element strides, so a broadcast mask is never expanded. Math is fp32.
//
// Specialization constants: 0 = mode, 1 = BR (rows per tile, queries and keys alike),
// 2 = EP (the head dims E and Ev rounded up to a multiple of 8, at most 128),
// 3 = workgroup size (BR * 8: eight lanes per tile row).
//   mode 0, forward: a workgroup per (query tile, bh): o, and lse = log sum exp(s)
//   mode 1, key/value grads: a workgroup per (key tile, bh), looping over query tiles:
//           dv = P^T dO, dk = scale * dS^T q
//   mode 2, query grad: a workgroup per (query tile, bh), looping over key tiles:
//           dq = scale * dS k
// with s = scale * q.k + bias, P = exp(s - lse), dS = P * (dO.v - delta) and
// delta = rowsum(dO * o). Two backward kernels instead of one with atomics keep every
// gradient deterministic.
//! variant f32 -DST_F32
//! variant f16 -DST_F16 -DNEED_F16
//! variant bf16 -DST_BF16 -DNEED_F16
#include "common.glsl"
#include "float_store.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint BR = 16;
layout(constant_id = 2) const uint EP = 64;
layout(constant_id = 3) const uint WG = 128;

const uint LANES = 8;
const uint PER = EP / LANES;  // accumulators per thread, at most 16
// Tile rows are padded by one float so that lanes reading one column of consecutive
// rows hit different shared-memory banks.
const uint RS = EP + 1;

layout(push_constant, scalar) uniform PC {
  uint64_t q, k, v;
  uint64_t g;      // backward: grad of the output
  uint64_t lse;    // forward: written; backward: read
  uint64_t delta;  // backward
  uint64_t bias;   // 0: none
  uint64_t dst;    // mode 0: o; mode 1: dk; mode 2: dq
  uint64_t dst2;   // mode 1: dv
  uint bs_b, bs_h, bs_i, bs_j;  // bias element strides
  uint H, L, S, E, Ev;
  uint flags;  // 1: causal (key j > query i masked), 2: has bias, F_TM_*: token-major
  float scale;
  uint tm_mult;  // row-stride multiples of token-major q, k, v, dO: a byte each
} pc;

#define NEG_INF uintBitsToFloat(0xff800000u)
#define F_TM_Q 4u
#define F_TM_K 8u
#define F_TM_V 16u
#define F_TM_G 32u
#define F_TM_DST 64u
#define F_TM_DST2 128u

// Element offset of row `row` (of `rows`) of head bh in an operand `n` wide.
uint row_offset(uint tm_flag, uint bh, uint row, uint rows, uint n) {
  if ((pc.flags & tm_flag) == 0u) return (bh * rows + row) * n;
  uint b = bh / pc.H, h = bh % pc.H;
  uint shift = tm_flag == F_TM_Q ? 0u : tm_flag == F_TM_K ? 8u : tm_flag == F_TM_V ? 16u
             : tm_flag == F_TM_G ? 24u : 32u;
  uint m = shift < 32u ? max((pc.tm_mult >> shift) & 255u, 1u) : 1u;
  return ((b * rows + row) * m * pc.H + h) * n;
}

shared float tA[BR * RS];
shared float tB[BR * RS];
shared float tC[BR * RS];
shared float tD[BR * RS];
shared float tP[BR * BR];
shared float tS[BR * BR];
shared float rowA[BR];  // forward: running max; backward: lse
shared float rowB[BR];  // forward: running sum; backward: delta
shared float rowC[BR];  // forward: rescale factor of this tile

// Rows [row0, row0 + BR) of head bh's [rows, n] matrix into a padded tile; zeros
// past its end. (A macro: GLSL passes arrays by value, shared ones included.)
#define LOAD_TILE(TILE, BASE, TM, BH, ROW0, ROWS, N)                                  \
  for (uint idx = gl_LocalInvocationID.x; idx < BR * EP; idx += WG) {                 \
    uint r_ = idx / EP, c_ = idx % EP;                                                \
    float x_ = 0.0;                                                                   \
    if ((ROW0) + r_ < (ROWS) && c_ < (N))                                             \
      x_ = LD(BASE, row_offset(TM, BH, (ROW0) + r_, ROWS, N) + c_);                   \
    TILE[r_ * RS + c_] = x_;                                                          \
  }

// The score of query i (tile row r of qt) against key j (row c of kt); -inf where masked.
float score(uint bh, uint i, uint j, uint r, uint c, bool q_in_a) {
  if (i >= pc.L || j >= pc.S || ((pc.flags & 1u) != 0u && j > i)) return NEG_INF;
  float s = 0.0;
  for (uint e = 0; e < pc.E; ++e) {
    s += q_in_a ? tA[r * RS + e] * (MODE == 0 ? tB[c * RS + e] : tC[c * RS + e])
                : tC[r * RS + e] * tA[c * RS + e];
  }
  s *= pc.scale;
  if ((pc.flags & 2u) != 0u) {
    uint b = bh / pc.H, h = bh % pc.H;
    s += LD(pc.bias, b * pc.bs_b + h * pc.bs_h + i * pc.bs_i + j * pc.bs_j);
  }
  return s;
}

void forward(uint bh, uint q0) {
  uint t = gl_LocalInvocationID.x, r = t / LANES, lane = t % LANES;
  LOAD_TILE(tA, pc.q, F_TM_Q, bh, q0, pc.L, pc.E);
  if (t < BR) {
    rowA[t] = NEG_INF;
    rowB[t] = 0.0;
  }
  float acc[16];
  [[unroll]] for (uint k = 0; k < PER; ++k) acc[k] = 0.0;
  uint kend = pc.S;
  if ((pc.flags & 1u) != 0u) kend = min(kend, q0 + BR);
  for (uint k0 = 0; k0 < kend; k0 += BR) {
    barrier();
    LOAD_TILE(tB, pc.k, F_TM_K, bh, k0, pc.S, pc.E);
    LOAD_TILE(tC, pc.v, F_TM_V, bh, k0, pc.S, pc.Ev);
    barrier();
    for (uint idx = t; idx < BR * BR; idx += WG) {
      uint rr = idx / BR, c = idx % BR;
      tP[idx] = score(bh, q0 + rr, k0 + c, rr, c, true);
    }
    barrier();
    if (t < BR) {
      float m_old = rowA[t], m = m_old;
      [[unroll]] for (uint c = 0; c < BR; ++c) m = max(m, tP[t * BR + c]);
      float alpha = 1.0, sum = 0.0;
      if (m != NEG_INF) {
        alpha = exp(m_old - m);  // 0 on the first live tile (m_old = -inf)
        [[unroll]] for (uint c = 0; c < BR; ++c) {
          float p = exp(tP[t * BR + c] - m);
          tP[t * BR + c] = p;
          sum += p;
        }
      } else {
        [[unroll]] for (uint c = 0; c < BR; ++c) tP[t * BR + c] = 0.0;
      }
      rowA[t] = m;
      rowB[t] = rowB[t] * alpha + sum;
      rowC[t] = alpha;
    }
    barrier();
    float alpha = rowC[r];
    [[unroll]] for (uint k = 0; k < PER; ++k) {
      uint d = lane + LANES * k;
      float a = acc[k] * alpha;
      [[unroll]] for (uint c = 0; c < BR; ++c) a += tP[r * BR + c] * tC[c * RS + d];
      acc[k] = a;
    }
  }
  barrier();
  uint i = q0 + r;
  if (i >= pc.L) return;
  float l = rowB[r];
  // A fully masked row has no probabilities: its output is 0, as with _safe_softmax.
  float inv = l > 0.0 ? 1.0 / l : 0.0;
  [[unroll]] for (uint k = 0; k < PER; ++k) {
    uint d = lane + LANES * k;
    if (d < pc.Ev) STORE(pc.dst, row_offset(F_TM_DST, bh, i, pc.L, pc.Ev) + d, acc[k] * inv);
  }
  if (lane == 0) BufF32(pc.lse).v[bh * pc.L + i] = l > 0.0 ? rowA[r] + log(l) : NEG_INF;
}

// P and dS of query tile rows r against key tile rows c, into tP and tS. The query
// tile (q, dO) is in tA/tB for mode 2 and tC/tD for mode 1; keys (k, v) the other pair.
void probabilities(uint bh, uint q0, uint k0) {
  for (uint idx = gl_LocalInvocationID.x; idx < BR * BR; idx += WG) {
    uint r = idx / BR, c = idx % BR;
    float s = score(bh, q0 + r, k0 + c, r, c, MODE == 2);
    float lse = rowA[r];
    float p = (s == NEG_INF || lse == NEG_INF) ? 0.0 : exp(s - lse);
    float dp = 0.0;
    for (uint e = 0; e < pc.Ev; ++e) {
      dp += MODE == 2 ? tB[r * RS + e] * tD[c * RS + e] : tD[r * RS + e] * tB[c * RS + e];
    }
    tP[idx] = p;
    tS[idx] = p * (dp - rowB[r]);
  }
}

void load_query_rows(uint bh, uint q0) {
  uint t = gl_LocalInvocationID.x;
  if (t < BR) {
    uint i = q0 + t;
    rowA[t] = i < pc.L ? BufF32(pc.lse).v[bh * pc.L + i] : NEG_INF;
    rowB[t] = i < pc.L ? BufF32(pc.delta).v[bh * pc.L + i] : 0.0;
  }
}

void key_value_grads(uint bh, uint k0) {
  uint t = gl_LocalInvocationID.x, c = t / LANES, lane = t % LANES;
  LOAD_TILE(tA, pc.k, F_TM_K, bh, k0, pc.S, pc.E);
  LOAD_TILE(tB, pc.v, F_TM_V, bh, k0, pc.S, pc.Ev);
  float dk[16], dv[16];
  [[unroll]] for (uint k = 0; k < PER; ++k) {
    dk[k] = 0.0;
    dv[k] = 0.0;
  }
  // With the causal mask, queries before this key tile see none of its keys.
  uint qstart = (pc.flags & 1u) != 0u ? k0 : 0u;
  for (uint q0 = qstart; q0 < pc.L; q0 += BR) {
    barrier();
    LOAD_TILE(tC, pc.q, F_TM_Q, bh, q0, pc.L, pc.E);
    LOAD_TILE(tD, pc.g, F_TM_G, bh, q0, pc.L, pc.Ev);
    load_query_rows(bh, q0);
    barrier();
    probabilities(bh, q0, k0);
    barrier();
    [[unroll]] for (uint k = 0; k < PER; ++k) {
      uint d = lane + LANES * k;
      float a = dv[k], b = dk[k];
      [[unroll]] for (uint r = 0; r < BR; ++r) {
        a += tP[r * BR + c] * tD[r * RS + d];
        b += tS[r * BR + c] * tC[r * RS + d];
      }
      dv[k] = a;
      dk[k] = b;
    }
  }
  uint j = k0 + c;
  if (j >= pc.S) return;
  [[unroll]] for (uint k = 0; k < PER; ++k) {
    uint d = lane + LANES * k;
    if (d < pc.E) STORE(pc.dst, row_offset(F_TM_DST, bh, j, pc.S, pc.E) + d, dk[k] * pc.scale);
    if (d < pc.Ev) STORE(pc.dst2, row_offset(F_TM_DST2, bh, j, pc.S, pc.Ev) + d, dv[k]);
  }
}

void query_grad(uint bh, uint q0) {
  uint t = gl_LocalInvocationID.x, r = t / LANES, lane = t % LANES;
  LOAD_TILE(tA, pc.q, F_TM_Q, bh, q0, pc.L, pc.E);
  LOAD_TILE(tB, pc.g, F_TM_G, bh, q0, pc.L, pc.Ev);
  load_query_rows(bh, q0);
  float dq[16];
  [[unroll]] for (uint k = 0; k < PER; ++k) dq[k] = 0.0;
  uint kend = pc.S;
  if ((pc.flags & 1u) != 0u) kend = min(kend, q0 + BR);
  for (uint k0 = 0; k0 < kend; k0 += BR) {
    barrier();
    LOAD_TILE(tC, pc.k, F_TM_K, bh, k0, pc.S, pc.E);
    LOAD_TILE(tD, pc.v, F_TM_V, bh, k0, pc.S, pc.Ev);
    barrier();
    probabilities(bh, q0, k0);
    barrier();
    [[unroll]] for (uint k = 0; k < PER; ++k) {
      uint d = lane + LANES * k;
      float a = dq[k];
      [[unroll]] for (uint c = 0; c < BR; ++c) a += tS[r * BR + c] * tC[c * RS + d];
      dq[k] = a;
    }
  }
  uint i = q0 + r;
  if (i >= pc.L) return;
  [[unroll]] for (uint k = 0; k < PER; ++k) {
    uint d = lane + LANES * k;
    if (d < pc.E) STORE(pc.dst, row_offset(F_TM_DST, bh, i, pc.L, pc.E) + d, dq[k] * pc.scale);
  }
}

void main() {
  uint bh = gl_WorkGroupID.y, row0 = gl_WorkGroupID.x * BR;
  if (MODE == 0) {
    forward(bh, row0);
  } else if (MODE == 1) {
    key_value_grads(bh, row0);
  } else {
    query_grad(bh, row0);
  }
}
