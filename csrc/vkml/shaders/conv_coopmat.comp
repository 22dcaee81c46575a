#version 450
// fp16 and bf16 convolution on the GPU's matrix units (VK_KHR_cooperative_matrix): the
// implicit GEMM of conv_gather.glsl (forward, data grad, phased data grad, weight grad
// with split-K partials, in every mode conv_gemm.comp runs) with its products as
// fragment multiply-adds and fp32 accumulation.
//
// A workgroup computes a BM x BM tile of C with WARPS_M x WARPS_N subgroups; each owns
// a WM x WN block of it as FM x FN accumulator fragments of MM x MN. K advances BK at a
// time through two shared-memory stages, the next step's gathers in flight while each
// subgroup multiplies from the current one, as in gemm_coopmat.comp. The gathers read
// elements one at a time (an im2col column is contiguous only by chance), staged as
// 16-bit values in quads:
//   A (weights, or gy in the weight grad) as [m][k]: a thread owns quads of four
//     consecutive k in fixed columns of the tile, rows WG / KQ apart;
//   B (the im2col operand) as [n][k], read as column-major fragments: a thread owns one
//     column (WG is a multiple of BN) and a run of RB consecutive k in it, so its
//     column's gather offsets are worked out once (prepare_column) and its rows advance
//     by digits, one quad store per four elements.
// Results pass through a float staging fragment per subgroup to store_out, which adds
// the bias and writes y, gx, gw or the split-K partials element by element.
//
// The `emulated` variants do the fragment work in plain arithmetic (lane l of a
// subgroup owning elements l, l + SG, ... of each fragment), so that everything around
// the matrix units is tested on lavapipe; bf16 is compiled as fp16 and retyped at the
// SPIR-V level (tools/spirv_bf16.py), its operands staged as uint16_t bits; see
// gemm_coopmat.comp for both.
//
// Specialization constants: 0 = MODE (conv_push.h), 1 = WG (threads), 2 = BM (the
// square output tile), 3 = BK, 4 = MM, 5 = MN, 6 = MK (the fragment shape), 7 = SG.
//! variant emulated -DEMULATED -DNEED_F16
//! variant emulated_bf16 -DEMULATED -DBF16 -DNEED_F16 -DNEED_I16
//! coopmat-variant f16 -DNEED_F16
//! coopmat-variant bf16 -DBF16 -DNEED_F16 -DNEED_I16 --retype-bf16
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#ifndef EMULATED
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#if defined(BF16)
#define ST_BF16
#else
#define ST_F16
#endif
#include "common.glsl"
#include "float_store.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 128;
layout(constant_id = 2) const uint BM = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint MM = 16;
layout(constant_id = 5) const uint MN = 16;
layout(constant_id = 6) const uint MK = 16;
layout(constant_id = 7) const uint SG = 32;

const uint BN = BM;
const uint WARPS = WG / SG;
const uint WARPS_M = 2u;
const uint WARPS_N = WARPS / WARPS_M;
const uint WM = BM / WARPS_M, WN = BN / WARPS_N;
const uint FM = WM / MM, FN = WN / MN;
// Shared rows padded by 8 halves: fragment loads need 16-byte aligned rows, and the
// padding moves successive rows to other banks.
const uint AST = BK + 8u;  // A: [m][k]
const uint BTS = BK + 8u;  // B: [n][k]
const uint CST = MN + 4u;
const uint A_STAGE = BM * AST, B_STAGE = BN * BTS;
const uint KQ = BK / 4u;       // quads across a row of the A tile
const uint AQ = BM * KQ / WG;  // A quads per thread, rows WG / KQ apart
const uint RB = BK * BN / WG;  // B elements per thread: a run along k of its column

#include "conv_push.h"
#include "coopmat_elements.glsl"
#define GATHER_T ELEM
#define gather_ld(P, O) BufE(P).v[O]
#define GATHER_ZERO ELEM(0)
#include "conv_gather.glsl"

shared ELEM4 As[2u * A_STAGE / 4u];
shared ELEM4 Bs[2u * B_STAGE / 4u];
shared float Cs[WARPS * MM * CST];

ELEM4 g_a[AQ];
ELEM4 g_b[RB / 4u];

// This thread's elements of the K step at k0 into g_a / g_b, zero outside the tile's
// rows, columns and k_end: a_k and b_k are the digits of its first A column and first
// B row (k0 + its offsets), `col` its B column.
void fetch(ConvTile t, uint k0, Digits a_k, Digits b_k, uint col, ivec3 a_sz, ivec3 b_sz) {
  uint tid = gl_LocalInvocationID.x;
  uint ka = k0 + tid % KQ * 4u;
  Digits one_a = split(1u, a_sz), one_b = split(1u, b_sz);
  Digits da[4];
  da[0] = a_k;
  [[unroll]] for (uint u = 1u; u < 4u; ++u) da[u] = advance(da[u - 1u], one_a, a_sz);
  [[unroll]] for (uint q = 0u; q < AQ; ++q) {
    uint m = t.m0 + tid / KQ + q * (WG / KQ);
    ELEM4 v = ELEM4(0);
    [[unroll]] for (uint u = 0u; u < 4u; ++u)
      if (m < t.M && ka + u < t.k_end) v[u] = load_a(m, ka + u, da[u]);
    g_a[q] = v;
  }
  uint kb = k0 + tid / BN * RB;
  Digits d = b_k;
  [[unroll]] for (uint r = 0u; r < RB; ++r) {
    ELEM x = GATHER_ZERO;
    if (col < t.N && kb + r < t.k_end) x = load_b(d);
    g_b[r / 4u][r % 4u] = x;
    d = advance(d, one_b, b_sz);
  }
}

void put(uint st) {
  uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint q = 0u; q < AQ; ++q) {
    uint m = tid / KQ + q * (WG / KQ);
    As[(st * A_STAGE + m * AST + tid % KQ * 4u) / 4u] = g_a[q];
  }
  uint n = tid % BN, kb = tid / BN * RB;
  [[unroll]] for (uint r = 0u; r < RB / 4u; ++r) Bs[(st * B_STAGE + n * BTS + kb) / 4u + r] = g_b[r];
}

void main() {
  // A driver running other subgroup sizes than this pipeline was made for would
  // compute garbage: write nothing (uniform across the workgroup).
  if (gl_NumSubgroups != WARPS) return;
  conv_sizes();
  uint wid = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  ConvTile t;
  if (!conv_tile(wid, BM, BN, BK, t)) return;  // uniform across the workgroup
  uint tid = gl_LocalInvocationID.x, warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint wm0 = warp % WARPS_M * WM, wn0 = warp / WARPS_M * WN;
  uint col = t.n0 + tid % BN;
  if (col < t.N) prepare_column(col);
  ivec3 a_sz = a_digits_box(), b_sz = b_digits_box();
  Digits a_k = split(t.k_begin + tid % KQ * 4u, a_sz);
  Digits b_k = split(t.k_begin + tid / BN * RB, b_sz);
  Digits a_step = split(BK, a_sz), b_step = split(BK, b_sz);

#ifdef EMULATED
  const uint EPL = MM * MN / SG;  // fragment elements per lane
  float acc[FM * FN * EPL];
  for (uint e = 0u; e < FM * FN * EPL; ++e) acc[e] = 0.0;
#else
  coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator> acc[FM * FN];
  [[unroll]] for (uint f = 0u; f < FM * FN; ++f)
    acc[f] = coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator>(0.0);
#endif

  if (t.k_begin < t.k_end) {
    fetch(t, t.k_begin, a_k, b_k, col, a_sz, b_sz);
    put(0u);
    barrier();
  }
  uint st = 0u;  // the stage this step multiplies from
  for (uint k0 = t.k_begin; k0 < t.k_end; k0 += BK) {
    bool more = k0 + BK < t.k_end;  // uniform
    if (more) {
      a_k = advance(a_k, a_step, a_sz);
      b_k = advance(b_k, b_step, b_sz);
      fetch(t, k0 + BK, a_k, b_k, col, a_sz, b_sz);
    }
    uint a_st = st * A_STAGE, b_st = st * B_STAGE;
    [[unroll]] for (uint kk = 0u; kk < BK; kk += MK) {
#ifdef EMULATED
      [[unroll]] for (uint f = 0u; f < FM * FN; ++f) {
        uint ar = wm0 + f / FN * MM, bc = wn0 + f % FN * MN;
        for (uint e = 0u; e < EPL; ++e) {
          uint idx = lane + e * SG, r = idx / MN, c = idx % MN;
          float s = acc[f * EPL + e];
          for (uint x = 0u; x < MK; ++x)
            s = fma(elem_value(staged(As, a_st + (ar + r) * AST + kk + x)),
                    elem_value(staged(Bs, b_st + (bc + c) * BTS + kk + x)), s);
          acc[f * EPL + e] = s;
        }
      }
#else
      coopmat<float16_t, gl_ScopeSubgroup, MM, MK, gl_MatrixUseA> fa[FM];
      coopmat<float16_t, gl_ScopeSubgroup, MK, MN, gl_MatrixUseB> fb[FN];
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        coopMatLoad(fa[i], As, (a_st + (wm0 + i * MM) * AST + kk) / 4u, AST / 4u,
                    gl_CooperativeMatrixLayoutRowMajor);
      [[unroll]] for (uint j = 0u; j < FN; ++j)
        coopMatLoad(fb[j], Bs, (b_st + (wn0 + j * MN) * BTS + kk) / 4u, BTS / 4u,
                    gl_CooperativeMatrixLayoutColumnMajor);
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i * FN + j] = coopMatMulAdd(fa[i], fb[j], acc[i * FN + j]);
#endif
    }
    // The other stage was last read before the previous barrier: fill it now.
    if (more) put(st ^ 1u);
    barrier();
    st ^= 1u;
  }

  uint cbase = warp * MM * CST;
  [[unroll]] for (uint f = 0u; f < FM * FN; ++f) {
#ifdef EMULATED
    for (uint e = 0u; e < EPL; ++e) {
      uint idx = lane + e * SG;
      Cs[cbase + idx / MN * CST + idx % MN] = acc[f * EPL + e];
    }
#else
    coopMatStore(acc[f], Cs, cbase, CST, gl_CooperativeMatrixLayoutRowMajor);
#endif
    subgroupBarrier();
    uint r0 = t.m0 + wm0 + f / FN * MM, c0 = t.n0 + wn0 + f % FN * MN;
    for (uint idx = lane; idx < MM * MN; idx += SG) {
      uint m = r0 + idx / MN, c = c0 + idx % MN;
      if (m < t.M && c < t.N) store_out(t, m, c, Cs[cbase + idx / MN * CST + idx % MN]);
    }
    subgroupBarrier();  // the next fragment reuses the staging
  }
}
