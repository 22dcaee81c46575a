#version 450
// Fused scaled dot-product attention, backward: the gradients of q, k and v without
// materialising the [L, S] score matrix. The probabilities are recomputed tile by tile
// from the forward's saved log-sum-exp (attention_forward.comp), as in
// FlashAttention-2. Operand layouts: attention_common.glsl. Math is fp32.
//
// With s = scale * q.k + bias, P = exp(s - lse), dP = dO.v, dS = P * (dP - delta) and
// delta = rowsum(dO * o), two modes (a specialization constant) split the work so that
// no gradient needs atomics and every result is deterministic:
//   mode 1, key/value grads: a workgroup owns BR keys and walks the queries in BC-wide
//           tiles: dv = P^T dO, dk = scale * dS^T q
//   mode 2, query grad: a workgroup owns BR queries and walks the keys: dq = scale * dS k
// Both hold the owned rows' two operands in shared memory (mode 1: k, v; mode 2: q, dO)
// and stream the other two (mode 1: q, dO; mode 2: k, v), so one code computes the
// score and dP tiles, rows by columns, as register blocks like the forward's: thread
// (ty, tx) of an NTY x NTX grid (NTX = 8) owns rows ty + i * NTY, columns
// tx + u * NTX and gradient columns 4 * (jj * NTX + tx) + w.
//
// Specialization constants: 0 = mode, 1 = TM, 2 = TN, 3 = EP (head dims rounded up to
// a multiple of 32), 4 = WG (NTY * NTX threads). BR = NTY * TM, BC = NTX * TN.
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "float_store.glsl"
#include "attention_common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 4) in;
layout(constant_id = 0) const uint MODE = ATTENTION_KEY_VALUE_GRADS;
layout(constant_id = 1) const uint TM = 4;
layout(constant_id = 2) const uint TN = 4;
layout(constant_id = 3) const uint EP = 64;
layout(constant_id = 4) const uint WG = 64;

const uint NTX = 8;
const uint NTY = WG / NTX;
const uint BR = NTY * TM;
const uint BC = NTX * TN;
const uint E4 = EP / 4;
const uint QS = E4 + 1;          // operand row pitch, padded against bank conflicts
const uint PS = BC / 4 + 1;      // row pitch of the probability tiles
const uint DQ = EP / (4 * NTX);  // vec4s of gradient columns per thread (at most 4)

shared vec4 R1[BR * QS];  // owned rows: mode 1 k, mode 2 q
shared vec4 R2[BR * QS];  // owned rows: mode 1 v, mode 2 dO
shared vec4 C1[BC * QS];  // streamed: mode 1 q, mode 2 k
shared vec4 C2[BC * QS];  // streamed: mode 1 dO, mode 2 v
shared vec4 T1[BR * PS];  // mode 1: P^T; mode 2: dS
shared vec4 T2[BR * PS];  // mode 1: dS^T

// acc[i][jj] += sum over the BC columns c of T[row i][c] * C[c][gradient column jj].
#define ACCUMULATE(ACC, T, C)                                                         \
  for (uint c4 = 0u; c4 < BC / 4u; ++c4) {                                            \
    vec4 pa_[TM];                                                                     \
    [[unroll]] for (uint i_ = 0u; i_ < TM; ++i_) pa_[i_] = T[(ty + i_ * NTY) * PS + c4]; \
    [[unroll]] for (uint w_ = 0u; w_ < 4u; ++w_) {                                    \
      vec4 cb_[DQ];                                                                   \
      [[unroll]] for (uint j_ = 0u; j_ < DQ; ++j_) cb_[j_] = C[(c4 * 4u + w_) * QS + j_ * NTX + tx]; \
      [[unroll]] for (uint i_ = 0u; i_ < TM; ++i_)                                    \
        [[unroll]] for (uint j_ = 0u; j_ < DQ; ++j_)                                  \
          ACC[i_ * DQ + j_] = fma(vec4(pa_[i_][w_]), cb_[j_], ACC[i_ * DQ + j_]);     \
    }                                                                                 \
  }

// Writes TM owned rows of a gradient (rows `rows` long, n wide) at dst.
#define STORE_ROWS(ACC, DST, TM_FLAG, R0, ROWS, N, MUL)                               \
  [[unroll]] for (uint i_ = 0u; i_ < TM; ++i_) {                                      \
    uint row_ = (R0) + ty + i_ * NTY;                                                 \
    if (row_ >= (ROWS)) continue;                                                     \
    uint base_ = row_offset(TM_FLAG, bh, row_, ROWS, N);                              \
    [[unroll]] for (uint j_ = 0u; j_ < DQ; ++j_) {                                    \
      uint d_ = (j_ * NTX + tx) * 4u;                                                 \
      [[unroll]] for (uint w_ = 0u; w_ < 4u; ++w_)                                    \
        if (d_ + w_ < (N)) STORE(DST, base_ + d_ + w_, ACC[i_ * DQ + j_][w_] * (MUL)); \
    }                                                                                 \
  }

void main() {
  // bh: mode 1 a (batch, k/v head), whose keys every query head of its group sees (GQA);
  // mode 2 a (batch, query head).
  uint bh = gl_WorkGroupID.y, r0 = gl_WorkGroupID.x * BR;
  uint t = gl_LocalInvocationID.x, tx = t % NTX, ty = t / NTX;
  bool causal = (pc.flags & ATTENTION_CAUSAL) != 0u, has_bias = (pc.flags & ATTENTION_BIAS) != 0u;
  bool drop = dropping();
  bool keys = MODE == ATTENTION_KEY_VALUE_GRADS;  // rows are keys, columns queries
  uint ncols = keys ? pc.L : pc.S;

  if (keys) {
    LOAD_TILE(R1, QS, BR, pc.k, ATTENTION_TM_K, bh, r0, pc.S, pc.E);
    LOAD_TILE(R2, QS, BR, pc.v, ATTENTION_TM_V, bh, r0, pc.S, pc.Ev);
  } else {
    LOAD_TILE(R1, QS, BR, pc.q, ATTENTION_TM_Q, bh, r0, pc.L, pc.E);
    LOAD_TILE(R2, QS, BR, pc.g, ATTENTION_TM_G, bh, r0, pc.L, pc.Ev);
  }
  BufF32 lse = BufF32(pc.lse), delta = BufF32(pc.delta);
  // Mode 2: the owned queries' lse and delta, for the whole walk.
  float row_lse[TM], row_delta[TM];
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    uint qi = r0 + ty + i * NTY;
    bool live = !keys && qi < pc.L;
    row_lse[i] = live ? lse.v[bh * pc.L + qi] : NEG_INF;
    row_delta[i] = live ? delta.v[bh * pc.L + qi] : 0.0;
  }
  vec4 acc1[TM * DQ], acc2[TM * DQ];  // mode 1: dk, dv; mode 2: dq
  [[unroll]] for (uint x = 0u; x < TM * DQ; ++x) {
    acc1[x] = vec4(0.0);
    acc2[x] = vec4(0.0);
  }

  // Under a causal mask, queries before a key see none of it: mode 1 starts at the
  // first owned key, and mode 2 stops after the last owned query.
  uint cbegin = keys && causal ? r0 : 0u;
  uint cend = !keys && causal ? min(pc.S, r0 + BR) : ncols;
  uint group = keys ? HEADS / KV_HEADS : 1u;
  for (uint t_ = 0u; t_ < group; ++t_) {  // mode 1: each query head of the group
    uint bq = keys ? query_head(bh, t_) : bh, bk = keys ? bh : kv_head(bh);
    for (uint c0 = cbegin; c0 < cend; c0 += BC) {
      barrier();  // the previous tile's readers of C1, C2, T1 and T2 are done
      if (keys) {
        LOAD_TILE(C1, QS, BC, pc.q, ATTENTION_TM_Q, bq, c0, pc.L, pc.E);
        LOAD_TILE(C2, QS, BC, pc.g, ATTENTION_TM_G, bq, c0, pc.L, pc.Ev);
      } else {
        LOAD_TILE(C1, QS, BC, pc.k, ATTENTION_TM_K, bk, c0, pc.S, pc.E);
        LOAD_TILE(C2, QS, BC, pc.v, ATTENTION_TM_V, bk, c0, pc.S, pc.Ev);
      }
      barrier();

      float s[TM * TN], dp[TM * TN];
      [[unroll]] for (uint x = 0u; x < TM * TN; ++x) {
        s[x] = 0.0;
        dp[x] = 0.0;
      }
      for (uint e4 = 0u; e4 < E4; ++e4) {
        vec4 a1[TM], a2[TM], b1[TN], b2[TN];
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          a1[i] = R1[(ty + i * NTY) * QS + e4];
          a2[i] = R2[(ty + i * NTY) * QS + e4];
        }
        [[unroll]] for (uint u = 0u; u < TN; ++u) {
          b1[u] = C1[(tx + u * NTX) * QS + e4];
          b2[u] = C2[(tx + u * NTX) * QS + e4];
        }
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          [[unroll]] for (uint u = 0u; u < TN; ++u) {
            float x = s[i * TN + u], y = dp[i * TN + u];
            [[unroll]] for (uint w = 0u; w < 4u; ++w) {
              x = fma(a1[i][w], b1[u][w], x);
              y = fma(a2[i][w], b2[u][w], y);
            }
            s[i * TN + u] = x;
            dp[i * TN + u] = y;
          }
        }
      }

      // Mode 1: the streamed queries' lse and delta.
      float col_lse[TN], col_delta[TN];
      [[unroll]] for (uint u = 0u; u < TN; ++u) {
        uint qi = c0 + tx + u * NTX;
        bool live = keys && qi < pc.L;
        col_lse[u] = live ? lse.v[bq * pc.L + qi] : NEG_INF;
        col_delta[u] = live ? delta.v[bq * pc.L + qi] : 0.0;
      }
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        uint row = ty + i * NTY;
        [[unroll]] for (uint u = 0u; u < TN; ++u) {
          uint col = tx + u * NTX;
          uint qi = keys ? c0 + col : r0 + row, kj = keys ? r0 + row : c0 + col;
          float m = keys ? col_lse[u] : row_lse[i];
          float p = 0.0;
          if (qi < pc.L && kj < pc.S && !(causal && kj > qi) && m != NEG_INF) {
            float v = s[i * TN + u] * pc.scale;
            if (has_bias) v += bias_at(bq, qi, kj);
            if (v != NEG_INF) p = exp(v - m);
          }
          // Dropout: o used P z (z = 0 or 1 / (1 - p)), so dv takes P z and dP is z dO v.
          float z = drop && p != 0.0 ? dropout_factor(bq, qi, kj) : 1.0;
          float ds = p * (dp[i * TN + u] * z - (keys ? col_delta[u] : row_delta[i]));
          if (keys) {
            T1[row * PS + col / 4u][col % 4u] = p * z;
            T2[row * PS + col / 4u][col % 4u] = ds;
          } else {
            T1[row * PS + col / 4u][col % 4u] = ds;
          }
        }
      }
      barrier();

      if (keys) {
        ACCUMULATE(acc2, T1, C2);  // dv += P^T dO
        ACCUMULATE(acc1, T2, C1);  // dk += dS^T q
      } else {
        ACCUMULATE(acc1, T1, C1);  // dq += dS k
      }
    }
  }

  if (keys) {
    STORE_ROWS(acc1, pc.dst, ATTENTION_TM_DST, r0, pc.S, pc.E, pc.scale);
    STORE_ROWS(acc2, pc.dst2, ATTENTION_TM_DST2, r0, pc.S, pc.Ev, 1.0);
  } else {
    STORE_ROWS(acc1, pc.dst, ATTENTION_TM_DST, r0, pc.L, pc.E, pc.scale);
  }
}
