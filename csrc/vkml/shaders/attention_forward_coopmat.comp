#version 450
// Fused scaled dot-product attention forward for fp16 and bf16 on the GPU's matrix
// units: attention_forward.comp's online softmax (FlashAttention-2), with q k^T and
// P v as fragment products (attention_coopmat.glsl) and the softmax statistics in fp32.
//
// A workgroup owns BR query rows of one (batch, head), MM per subgroup, and walks the
// keys BC at a time. Per key tile a subgroup stores its MM x BC scores in its float
// scratch; its lanes mask and scale them, update the running row maxima, and write
// the probabilities, rounded to the storage dtype, as its 16-bit tile. The output
// (MM x EP, fp32) stays in registers, lane l holding elements l, l + SG, ... of each
// MM x MN block: each fragment of P v passes through the scratch once and is added
// to the rescaled output there, since a fragment's elements cannot be scaled per row.
//! variant emulated -DEMULATED -DNEED_F16
//! variant emulated_bf16 -DEMULATED -DBF16 -DNEED_F16 -DNEED_I16
//! coopmat-variant f16 -DNEED_F16
//! coopmat-variant bf16 -DBF16 -DNEED_F16 -DNEED_I16 --retype-bf16
#extension GL_GOOGLE_include_directive : require
#include "attention_coopmat.glsl"

shared ELEM4 Qs[BR * OP / 4u];  // [query][dim]
shared ELEM4 Ks[BC * OP / 4u];  // [key][dim]
shared ELEM4 Vs[BC * OP / 4u];  // [key][dim]
shared float Ss[WARPS * MM * SP];     // per subgroup: scores, then a P v fragment
shared ELEM4 Ps[WARPS * MM * TP / 4u];  // per subgroup: probabilities [query][key]
shared float red[WARPS * MM * LPR];   // partial row maxima, then sums, per lane of a row
shared float rowf[WARPS * MM];        // per row: this tile's rescale; at the end 1 / sum
// The output accumulator. The emulation keeps it in shared memory ([query][dim]) and
// walks it element by element, unrolling nothing: lavapipe compiles a kernel with
// barriers as a coroutine, and unrolled loops and arrays live across them took
// minutes to compile.
#ifdef EMULATED
shared float Os[BR * EP];
#endif

// The scaled, biased and masked score of query qi, key kj, s their dot product.
float masked_score(float s, uint bh, uint qi, uint kj, bool causal, bool has_bias) {
  if (qi >= pc.L || kj >= pc.S || (causal && kj > qi)) return NEG_INF;
  float v = s * pc.scale;
  return has_bias ? v + bias_at(bh, qi, kj) : v;
}

void main() {
  // A driver running other subgroup sizes than this pipeline was made for would
  // compute garbage: write nothing (uniform across the workgroup).
  if (gl_NumSubgroups != WARPS) return;
  uint bh = gl_WorkGroupID.y, q0 = gl_WorkGroupID.x * BR, bkv = kv_head(bh);
  uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  bool causal = (pc.flags & ATTENTION_CAUSAL) != 0u, has_bias = (pc.flags & ATTENTION_BIAS) != 0u;
  bool drop = dropping();
  uint wr = warp * MM;  // the subgroup's first row: of the tile, its scratch, its stats
  uint sat = wr * SP, tat = wr * TP;

  LOAD_ROWS(Qs, 0u, BR, pc.q, ATTENTION_TM_Q, bh, q0, pc.L, pc.E);
  float m[RPL], l[RPL];  // running maximum and sum of this lane's rows
  [[unroll]] for (uint t = 0u; t < RPL; ++t) {
    m[t] = NEG_INF;
    l[t] = 0.0;
  }
#ifdef EMULATED
  for (uint i = lane; i < MM * EP; i += SG) Os[wr * EP + i] = 0.0;
#else
  float o[EP / MN * EPL];  // element e of this lane in column block j at o[j * EPL + e]
  [[unroll]] for (uint x = 0u; x < EP / MN * EPL; ++x) o[x] = 0.0;
#endif

  // Keys past the last query row of this tile are all masked under a causal mask.
  uint kend = causal ? min(pc.S, q0 + BR) : pc.S;
  for (uint k0 = 0u; k0 < kend; k0 += BC) {
    barrier();  // the previous tile's readers of Ks and Vs are done
    LOAD_ROWS(Ks, 0u, BC, pc.k, ATTENTION_TM_K, bkv, k0, pc.S, pc.E);
    LOAD_ROWS(Vs, 0u, BC, pc.v, ATTENTION_TM_V, bkv, k0, pc.S, pc.Ev);
    barrier();
    SCORES(Qs, wr * OP, Ks, 0u, sat);

    [[unroll]] for (uint t = 0u; t < RPL; ++t) {
      uint r = lane / LPR + t * RSTEP, qi = q0 + wr + r;
      float mt = NEG_INF;
      for (uint u = 0u; u < CPL; ++u) {
        uint c = lane % LPR + u * LPR;
        mt = max(mt, masked_score(Ss[sat + r * SP + c], bh, qi, k0 + c, causal, has_bias));
      }
      red[(wr + r) * LPR + lane % LPR] = mt;
    }
    subgroupBarrier();
    float alpha[RPL], sum[RPL];
    [[unroll]] for (uint t = 0u; t < RPL; ++t) {
      uint r = lane / LPR + t * RSTEP, qi = q0 + wr + r;
      float mt = m[t];
      for (uint w = 0u; w < LPR; ++w) mt = max(mt, red[(wr + r) * LPR + w]);
      // alpha rescales what was summed under the old maximum: 0 before the first live
      // key (m = -inf), and nothing changes while the row has none (mt = -inf).
      alpha[t] = m[t] == NEG_INF ? 0.0 : exp(m[t] - mt);
      m[t] = mt;
      sum[t] = 0.0;
      for (uint u = 0u; u < CPL; ++u) {
        uint c = lane % LPR + u * LPR;
        float v = masked_score(Ss[sat + r * SP + c], bh, qi, k0 + c, causal, has_bias);
        float p = v == NEG_INF ? 0.0 : exp(v - mt);
        sum[t] += p;  // the softmax's sum is of every probability, dropped or not
        if (drop && p != 0.0 && !dropout_keep(bh, qi, k0 + c)) p = 0.0;
        staged(Ps, tat + r * TP + c) = to_elem(p);
      }
      if (lane % LPR == 0u) rowf[wr + r] = alpha[t];
    }
    subgroupBarrier();  // the row maxima in red are read
    [[unroll]] for (uint t = 0u; t < RPL; ++t)
      red[(wr + lane / LPR + t * RSTEP) * LPR + lane % LPR] = sum[t];
    subgroupBarrier();
    [[unroll]] for (uint t = 0u; t < RPL; ++t) {
      uint r = lane / LPR + t * RSTEP;
      float total = 0.0;
      for (uint w = 0u; w < LPR; ++w) total += red[(wr + r) * LPR + w];
      l[t] = l[t] * alpha[t] + total;
    }

#ifdef EMULATED
    for (uint i = lane; i < MM * EP; i += SG) {
      uint r = i / EP, d = i % EP;
      float pv = 0.0;
      for (uint c = 0u; c < BC; ++c)
        pv = fma(elem_value(staged(Ps, tat + r * TP + c)), elem_value(staged(Vs, c * OP + d)), pv);
      Os[wr * EP + i] = Os[wr * EP + i] * rowf[wr + r] + pv;
    }
#else
    [[unroll]] for (uint j = 0u; j < EP / MN; ++j) {
      ACC_DECL(pv, 1u);
      ACC_ZERO(pv, 1u);
      ACCUMULATE(pv, MN, Ps, tat, Vs, j * MN);
      FOR_EACH_ELEMENT(pv, 0u, sat, o[j * EPL + e_] = o[j * EPL + e_] * rowf[wr + er] + ev);
    }
#endif
    subgroupBarrier();  // rowf and the scratch are read before the next tile's writes
  }

  [[unroll]] for (uint t = 0u; t < RPL; ++t) {
    uint r = lane / LPR + t * RSTEP, qi = q0 + wr + r;
    // A fully masked row has no probabilities: its output is 0, as with _safe_softmax.
    if (lane % LPR == 0u) {
      rowf[wr + r] = l[t] > 0.0 ? dropout_scale() / l[t] : 0.0;  // with dropout's 1 / (1 - p)
      if (qi < pc.L) BufF32(pc.lse).v[bh * pc.L + qi] = l[t] > 0.0 ? m[t] + log(l[t]) : NEG_INF;
    }
  }
  subgroupBarrier();
#ifdef EMULATED
  for (uint i = lane; i < MM * EP; i += SG) {
    uint r = i / EP, d = i % EP;
    float v = Os[wr * EP + i];
#else
  [[unroll]] for (uint x = 0u; x < EP / MN * EPL; ++x) {
    uint i = lane + x % EPL * SG, r = i / MN, d = x / EPL * MN + i % MN;
    float v = o[x];
#endif
    uint qi = q0 + wr + r;
    if (qi < pc.L && d < pc.Ev)
      STORE(pc.dst, row_offset(ATTENTION_TM_DST, bh, qi, pc.L, pc.Ev) + d, v * rowf[wr + r]);
  }
}
