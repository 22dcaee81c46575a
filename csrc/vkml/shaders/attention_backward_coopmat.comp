#version 450
// Fused scaled dot-product attention backward for fp16 and bf16 on the GPU's matrix
// units: attention_backward.comp's two modes (specialization constant 7), with the
// score, dP and gradient products as fragment products (attention_coopmat.glsl):
//   mode 1, key/value grads: a workgroup owns BR keys and walks the queries:
//           S^T = k q^T, dP^T = v dO^T, dv += P^T dO, dk += dS^T q (times scale)
//   mode 2, query grad: a workgroup owns BR queries and walks the keys:
//           S = q k^T, dP = dO v^T, dq += dS k (times scale)
// with P = exp(scale * s + bias - lse) and dS = P * (dP - delta), both rounded to the
// storage dtype for the products, as in FlashAttention-2. The gradients accumulate in
// fragments across the whole walk; no softmax rescaling is needed here.
//! variant emulated -DEMULATED -DNEED_F16
//! variant emulated_bf16 -DEMULATED -DBF16 -DNEED_F16 -DNEED_I16
//! coopmat-variant f16 -DNEED_F16
//! coopmat-variant bf16 -DBF16 -DNEED_F16 -DNEED_I16 --retype-bf16
#extension GL_GOOGLE_include_directive : require
#include "attention_coopmat.glsl"

layout(constant_id = 7) const uint MODE = ATTENTION_KEY_VALUE_GRADS;

shared ELEM4 R1[BR * OP / 4u];  // owned rows: mode 1 k, mode 2 q
shared ELEM4 R2[BR * OP / 4u];  // owned rows: mode 1 v, mode 2 dO
shared ELEM4 C1[BC * OP / 4u];  // streamed: mode 1 q, mode 2 k
shared ELEM4 C2[BC * OP / 4u];  // streamed: mode 1 dO, mode 2 v
shared float Ss[WARPS * MM * SP];       // per subgroup: scores, then dP, then gradients
shared ELEM4 T1[WARPS * MM * TP / 4u];  // per subgroup: mode 1 P^T, mode 2 dS
shared ELEM4 T2[WARPS * MM * TP / 4u];  // per subgroup: mode 1 dS^T

const uint PE = MM * BC / SG;  // score elements per lane

// Element d of row `row` of head bh's gradient, `rows` x n, if inside it.
void store_grad(uint64_t dst, uint flag, uint bh, uint row, uint rows, uint n, uint d, float v) {
  if (row < rows && d < n) STORE(dst, row_offset(flag, bh, row, rows, n) + d, v);
}

void main() {
  // A driver running other subgroup sizes than this pipeline was made for would
  // compute garbage: write nothing (uniform across the workgroup).
  if (gl_NumSubgroups != WARPS) return;
  // bh: mode 1 a (batch, k/v head), whose keys every query head of its group sees (GQA);
  // mode 2 a (batch, query head).
  uint bh = gl_WorkGroupID.y, r0 = gl_WorkGroupID.x * BR;
  uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  bool causal = (pc.flags & ATTENTION_CAUSAL) != 0u, has_bias = (pc.flags & ATTENTION_BIAS) != 0u;
  bool drop = dropping();
  bool keys = MODE == ATTENTION_KEY_VALUE_GRADS;  // rows are keys, columns queries
  uint wr = warp * MM;  // the subgroup's first row: of the tile and of its scratch
  uint sat = wr * SP, tat = wr * TP;
  uint ncols = keys ? pc.L : pc.S;

  if (keys) {
    LOAD_ROWS(R1, 0u, BR, pc.k, ATTENTION_TM_K, bh, r0, pc.S, pc.E);
    LOAD_ROWS(R2, 0u, BR, pc.v, ATTENTION_TM_V, bh, r0, pc.S, pc.Ev);
  } else {
    LOAD_ROWS(R1, 0u, BR, pc.q, ATTENTION_TM_Q, bh, r0, pc.L, pc.E);
    LOAD_ROWS(R2, 0u, BR, pc.g, ATTENTION_TM_G, bh, r0, pc.L, pc.Ev);
  }
  BufF32 lse = BufF32(pc.lse), delta = BufF32(pc.delta);
  ACC_DECL(acc1, EP / MN);  // mode 1: dk; mode 2: dq
  ACC_DECL(acc2, EP / MN);  // mode 1: dv
  ACC_ZERO(acc1, EP / MN);
  ACC_ZERO(acc2, EP / MN);

  // Under a causal mask, queries before a key see none of it: mode 1 starts at the
  // first owned key, and mode 2 stops after the last owned query.
  uint cbegin = keys && causal ? r0 : 0u;
  uint cend = !keys && causal ? min(pc.S, r0 + BR) : ncols;
  uint group = keys ? HEADS / KV_HEADS : 1u;
  for (uint t_ = 0u; t_ < group; ++t_) {  // mode 1: each query head of the group
    uint bq = keys ? query_head(bh, t_) : bh, bk = keys ? bh : kv_head(bh);
    for (uint c0 = cbegin; c0 < cend; c0 += BC) {
      barrier();  // the previous tile's readers of C1 and C2 are done
      if (keys) {
        LOAD_ROWS(C1, 0u, BC, pc.q, ATTENTION_TM_Q, bq, c0, pc.L, pc.E);
        LOAD_ROWS(C2, 0u, BC, pc.g, ATTENTION_TM_G, bq, c0, pc.L, pc.Ev);
      } else {
        LOAD_ROWS(C1, 0u, BC, pc.k, ATTENTION_TM_K, bk, c0, pc.S, pc.E);
        LOAD_ROWS(C2, 0u, BC, pc.v, ATTENTION_TM_V, bk, c0, pc.S, pc.Ev);
      }
      barrier();

      SCORES(R1, wr * OP, C1, 0u, sat);
      float p[PE];
      [[unroll]] for (uint e = 0u; e < PE; ++e) {
        uint i = lane + e * SG, r = i / BC, c = i % BC;
        uint qi = keys ? c0 + c : r0 + wr + r, kj = keys ? r0 + wr + r : c0 + c;
        p[e] = 0.0;
        if (qi < pc.L && kj < pc.S && !(causal && kj > qi)) {
          float m = lse.v[bq * pc.L + qi];
          float v = Ss[sat + r * SP + c] * pc.scale;
          if (has_bias) v += bias_at(bq, qi, kj);
          if (m != NEG_INF && v != NEG_INF) p[e] = exp(v - m);
        }
      }
      subgroupBarrier();  // the scores are read
      SCORES(R2, wr * OP, C2, 0u, sat);
      [[unroll]] for (uint e = 0u; e < PE; ++e) {
        uint i = lane + e * SG, r = i / BC, c = i % BC;
        uint qi = keys ? c0 + c : r0 + wr + r, kj = keys ? r0 + wr + r : c0 + c;
        // Dropout: o used P z (z = 0 or 1 / (1 - p)), so dv takes P z and dP is z dO v.
        float z = drop && p[e] != 0.0 ? dropout_factor(bq, qi, kj) : 1.0;
        float ds = 0.0;
        if (p[e] != 0.0) ds = p[e] * (Ss[sat + r * SP + c] * z - delta.v[bq * pc.L + qi]);
        if (keys) {
          staged(T1, tat + r * TP + c) = to_elem(p[e] * z);
          staged(T2, tat + r * TP + c) = to_elem(ds);
        } else {
          staged(T1, tat + r * TP + c) = to_elem(ds);
        }
      }
      subgroupBarrier();

      if (keys) {
        ACCUMULATE(acc2, EP, T1, tat, C2, 0u);  // dv += P^T dO
        ACCUMULATE(acc1, EP, T2, tat, C1, 0u);  // dk += dS^T q
      } else {
        ACCUMULATE(acc1, EP, T1, tat, C1, 0u);  // dq += dS k
      }
      subgroupBarrier();  // the tiles are read before the next walk step writes them
    }
  }

  uint rows = keys ? pc.S : pc.L;
  UNROLL for (uint j = 0u; j < EP / MN; ++j) {
    FOR_EACH_ELEMENT(acc1, j, sat,
                     store_grad(pc.dst, ATTENTION_TM_DST, bh, r0 + wr + er, rows, pc.E,
                                j * MN + ec, ev * pc.scale));
  }
  if (keys) {
    UNROLL for (uint j = 0u; j < EP / MN; ++j) {
      FOR_EACH_ELEMENT(acc2, j, sat,
                       store_grad(pc.dst2, ATTENTION_TM_DST2, bh, r0 + wr + er, pc.S, pc.Ev,
                                  j * MN + ec, ev));
    }
  }
}
