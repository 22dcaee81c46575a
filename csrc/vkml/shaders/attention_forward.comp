#version 450
// Fused scaled dot-product attention, forward: o = softmax(scale * q k^T + bias) v and
// lse = log sum exp of each score row, without materialising the [L, S] score matrix
// (FlashAttention-2's online softmax). A workgroup owns BQ query rows of one (batch,
// head) and walks the keys in BKV-row tiles: q, k and v tiles sit in shared memory,
// and each thread keeps a TM x TN block of scores and a TM x DT block of the output in
// registers, so every shared-memory read (a vec4) feeds several multiply-adds, as in
// the GEMM kernels. Operand layouts: attention_common.glsl. Math is fp32.
//
// Threads form an NTY x NTX grid (NTX = 8). Thread (ty, tx) owns query rows
// ty + i * NTY, key columns tx + u * NTX of the score tile, and output columns
// 4 * (jj * NTX + tx) + w: strided so that the vec4 reads of one warp fall in distinct
// shared-memory banks. The NTX threads of a row exchange their partial row maxima
// through shared memory; each keeps its own partial row sum until the end.
//
// Specialization constants: 0 = TM, 1 = TN, 2 = EP (the head dims E and Ev rounded up
// to a multiple of 32), 3 = WG (NTY * NTX threads). BQ = NTY * TM, BKV = NTX * TN.
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "float_store.glsl"
#include "attention_common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint TM = 4;
layout(constant_id = 1) const uint TN = 4;
layout(constant_id = 2) const uint EP = 64;
layout(constant_id = 3) const uint WG = 128;

const uint NTX = 8;
const uint NTY = WG / NTX;
const uint BQ = NTY * TM;
const uint BKV = NTX * TN;
const uint E4 = EP / 4;       // vec4s in a row of head dims
const uint QS = E4 + 1;       // row pitch of the q and k tiles, padded against bank conflicts
const uint PS = BKV / 4 + 1;  // row pitch of the probability tile
const uint DQ = EP / (4 * NTX);  // vec4s of output columns per thread (at most 4)

shared vec4 Qs[BQ * QS];   // [query row][dims]
shared vec4 Ks[BKV * QS];  // [key row][dims]
shared vec4 Vs[BKV * E4];  // [key row][dims]
shared vec4 Ps[BQ * PS];   // [query row][key]: this tile's probabilities
shared float red[BQ * NTX];  // a partial row maximum (then sum) per thread

void main() {
  uint bh = gl_WorkGroupID.y, q0 = gl_WorkGroupID.x * BQ, bkv = kv_head(bh);
  uint t = gl_LocalInvocationID.x, tx = t % NTX, ty = t / NTX;
  bool causal = (pc.flags & ATTENTION_CAUSAL) != 0u, has_bias = (pc.flags & ATTENTION_BIAS) != 0u;
  bool drop = dropping();

  LOAD_TILE(Qs, QS, BQ, pc.q, ATTENTION_TM_Q, bh, q0, pc.L, pc.E);
  float m[TM], l[TM];  // running row maximum, and this thread's share of the row sum
  vec4 o[TM * DQ];
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    m[i] = NEG_INF;
    l[i] = 0.0;
    [[unroll]] for (uint jj = 0u; jj < DQ; ++jj) o[i * DQ + jj] = vec4(0.0);
  }

  // Keys past the last query row of this tile are all masked under a causal mask.
  uint kend = causal ? min(pc.S, q0 + BQ) : pc.S;
  for (uint k0 = 0u; k0 < kend; k0 += BKV) {
    barrier();  // the previous tile's readers of Ks, Vs and Ps are done
    LOAD_TILE(Ks, QS, BKV, pc.k, ATTENTION_TM_K, bkv, k0, pc.S, pc.E);
    LOAD_TILE(Vs, E4, BKV, pc.v, ATTENTION_TM_V, bkv, k0, pc.S, pc.Ev);
    barrier();

    float s[TM * TN];
    [[unroll]] for (uint x = 0u; x < TM * TN; ++x) s[x] = 0.0;
    for (uint e4 = 0u; e4 < E4; ++e4) {
      vec4 qa[TM], kb[TN];
      [[unroll]] for (uint i = 0u; i < TM; ++i) qa[i] = Qs[(ty + i * NTY) * QS + e4];
      [[unroll]] for (uint u = 0u; u < TN; ++u) kb[u] = Ks[(tx + u * NTX) * QS + e4];
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint u = 0u; u < TN; ++u) {
          float a = s[i * TN + u];
          a = fma(qa[i].x, kb[u].x, a);
          a = fma(qa[i].y, kb[u].y, a);
          a = fma(qa[i].z, kb[u].z, a);
          s[i * TN + u] = fma(qa[i].w, kb[u].w, a);
        }
      }
    }

    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      uint qi = q0 + ty + i * NTY;
      float mt = NEG_INF;
      [[unroll]] for (uint u = 0u; u < TN; ++u) {
        uint kj = k0 + tx + u * NTX;
        float v = s[i * TN + u] * pc.scale;
        if (has_bias && qi < pc.L && kj < pc.S) v += bias_at(bh, qi, kj);
        if (qi >= pc.L || kj >= pc.S || (causal && kj > qi)) v = NEG_INF;
        s[i * TN + u] = v;
        mt = max(mt, v);
      }
      red[(ty + i * NTY) * NTX + tx] = mt;
    }
    barrier();

    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      uint row = ty + i * NTY;
      float mt = m[i];
      [[unroll]] for (uint w = 0u; w < NTX; ++w) mt = max(mt, red[row * NTX + w]);
      // alpha rescales what was summed under the old maximum: 0 before the first live
      // key (m = -inf), and nothing changes while the row has none (mt = -inf).
      float alpha = m[i] == NEG_INF ? 0.0 : exp(m[i] - mt);
      m[i] = mt;
      float sum = 0.0;
      [[unroll]] for (uint u = 0u; u < TN; ++u) {
        float v = s[i * TN + u];
        float p = v == NEG_INF ? 0.0 : exp(v - mt);
        sum += p;  // the softmax's sum is of every probability, dropped or not
        uint c = tx + u * NTX;
        if (drop && p != 0.0 && !dropout_keep(bh, q0 + row, k0 + c)) p = 0.0;
        Ps[row * PS + c / 4u][c % 4u] = p;
      }
      l[i] = l[i] * alpha + sum;
      [[unroll]] for (uint jj = 0u; jj < DQ; ++jj) o[i * DQ + jj] *= alpha;
    }
    barrier();

    for (uint c4 = 0u; c4 < BKV / 4u; ++c4) {
      vec4 pa[TM];
      [[unroll]] for (uint i = 0u; i < TM; ++i) pa[i] = Ps[(ty + i * NTY) * PS + c4];
      [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        vec4 vb[DQ];
        [[unroll]] for (uint jj = 0u; jj < DQ; ++jj) vb[jj] = Vs[(c4 * 4u + w) * E4 + jj * NTX + tx];
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          [[unroll]] for (uint jj = 0u; jj < DQ; ++jj)
            o[i * DQ + jj] = fma(vec4(pa[i][w]), vb[jj], o[i * DQ + jj]);
        }
      }
    }
  }

  // The row sums: each thread's share, added across the NTX threads of the row. The
  // last reads of red (the row maxima) were before the last tile's final barrier.
  [[unroll]] for (uint i = 0u; i < TM; ++i) red[(ty + i * NTY) * NTX + tx] = l[i];
  barrier();
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    uint row = ty + i * NTY, qi = q0 + row;
    if (qi >= pc.L) continue;
    float total = 0.0;
    [[unroll]] for (uint w = 0u; w < NTX; ++w) total += red[row * NTX + w];
    // A fully masked row has no probabilities: its output is 0, as with _safe_softmax.
    // Dropout's 1 / (1 - p) joins the normalisation.
    float inv = total > 0.0 ? dropout_scale() / total : 0.0;
    uint base = row_offset(ATTENTION_TM_DST, bh, qi, pc.L, pc.Ev);
    [[unroll]] for (uint jj = 0u; jj < DQ; ++jj) {
      uint d = (jj * NTX + tx) * 4u;
      [[unroll]] for (uint w = 0u; w < 4u; ++w)
        if (d + w < pc.Ev) STORE(pc.dst, base + d + w, o[i * DQ + jj][w] * inv);
    }
    if (tx == 0u) BufF32(pc.lse).v[bh * pc.L + qi] = total > 0.0 ? m[i] + log(total) : NEG_INF;
  }
}
