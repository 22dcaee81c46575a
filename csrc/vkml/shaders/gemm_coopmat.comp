#version 450
// fp16 and bf16 GEMM on the GPU's matrix units (VK_KHR_cooperative_matrix)
// with fp32 accumulation. Operands, strides, alpha, beta, the bias, split-K partials and
// the push constants are those of gemm.comp, whose GEMM_SPLIT_SUM pass also adds
// up this kernel's partial sums.
//
// A workgroup computes a BM x BN tile of C with WARPS_M x WARPS_N subgroups;
// each subgroup owns a WM x WN block of it, held as FM x FN accumulator
// fragments of MM x MN. K advances BK at a time: all threads stage the A and B
// tiles in shared memory as 16-bit values (bf16 as bits), eight or four elements per
// load (16 or 8 bytes) where the operand is contiguous along the tile's fast side and
// aligned for it (A_VEC, B_VEC; element-wise at the edges), the next step's loads in
// flight while each subgroup multiplies its fragments MK deep, in two shared-memory
// stages. Each operand's layout and load width are specialization constants, so the
// unrolled K loop carries no branch on them. Results
// pass through a shared staging fragment per subgroup, so that alpha, beta,
// the bias, output strides and edges are handled per element, as in gemm.comp.
//
// The `emulated` variant does the matrix-unit work (fragment multiply-add and
// store) in plain arithmetic, lane l of a subgroup owning elements l, l + SG,
// ... of each fragment. It compiles with any glslc and runs on any device, so
// the tiling, staging and edge handling around the matrix units are tested
// where no device has them (lavapipe). The `f16` variant needs a glslang that
// knows GL_KHR_cooperative_matrix (see shaders.cmake).
//
// bf16 (BF16): PyPI's glslang has no bfloat16 type, so the `bf16` variant is
// this source with float16_t standing for bfloat16, compiled and then retyped
// to bfloat16 at the SPIR-V level (tools/spirv_bf16.py). That is only sound
// because float16_t values here are never computed with: they are loaded,
// stored and multiplied on the matrix units; the retyping checks this. C and
// the bias are read and written as bf16 bits, rounded to nearest even in
// integer steps. Both bf16 variants stage the operands as uint16_t bits, so that
// only the matrix fragments have the bfloat16 type: coopMatLoad reinterprets the
// staged bits. (Staged as retyped bfloat16 vectors, the same kernel ran 4x slower than
// fp16 on the H200; whether the bits help there is still to be measured.)
//
// Specialization constants: 0 = BM, 1 = BN, 2 = BK, 3 = WG (threads),
// 4 = MM, 5 = MN, 6 = MK (the fragment shape), 7 = SG (subgroup size), 8 = A_MFAST,
// 9 = B_KFAST (the operands' staged forms, below), 10 = A_VEC, 11 = B_VEC (elements per
// global load: 1, 4 or 8; ops/gemm_quads.h's vector_width).
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
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 3) const uint WG = 128;
layout(constant_id = 4) const uint MM = 16;
layout(constant_id = 5) const uint MN = 16;
layout(constant_id = 6) const uint MK = 16;
layout(constant_id = 7) const uint SG = 32;
layout(constant_id = 8) const uint A_MFAST = 0;
layout(constant_id = 9) const uint B_KFAST = 0;
layout(constant_id = 10) const uint A_VEC = 4;
layout(constant_id = 11) const uint B_VEC = 4;

const uint WARPS = WG / SG;
const uint WARPS_M = 2;
const uint WARPS_N = WARPS / WARPS_M;
const uint WM = BM / WARPS_M;
const uint WN = BN / WARPS_N;
const uint FM = WM / MM;
const uint FN = WN / MN;
// Shared rows padded by 8 halves (4 floats): fragment loads and stores need
// 16-byte aligned rows, and the padding moves successive rows to other banks.
// An operand is staged with its contiguous side along the stage's rows, so that each
// quad it loads is one store: A as [m][k] (AST apart) or, when it is contiguous along m
// (A_MFAST), as [k][m] (ATS apart); B as [k][n] (BST) or, contiguous along k
// (B_KFAST: x @ w^T in a linear layer), as [n][k] (BTS). The fragment loads then read
// the second forms column-major.
const uint AST = BK + 8, ATS = BM + 8;
const uint BST = BN + 8, BTS = BK + 8;
const uint CST = MN + 4;

#include "coopmat_elements.glsl"

// Two stages of each: a K step multiplies from one while the next step's tiles are
// stored into the other, so one barrier per step suffices. A stage holds either form
// (BM, BN >= BK: the [m][k] and [n][k] forms are the larger).
const uint A_STAGE = BM * AST, B_STAGE = BN * BTS;
// Staged as quads: a quad is one 8-byte shared store instead of four 2-byte ones, which
// otherwise outnumber the matrix-unit instructions. Strides and fragment offsets are
// multiples of four elements, so coopMatLoad reads the quads directly (its element and
// stride count quads).
shared ELEM4 As[2 * A_STAGE / 4u];  // [stage][m][k], or [stage][k][m] (A_MFAST)
shared ELEM4 Bs[2 * B_STAGE / 4u];  // [stage][k][n], or [stage][n][k] (B_KFAST)
shared float Cs[WARPS * MM * CST];

#include "gemm_push.h"

#include "gemm_groups.glsl"

void store_c(uint bi, uint gi, uint gj, float v) {
  gi += off_m;
  gj += off_n;
#ifdef BF16
  BufU16 C = BufU16(pc.c + uint64_t(bi) * uint64_t(pc.c_batch) * 2u);
  if ((pc.flags & GEMM_BIAS) != 0u) {
    BufU16 Bias = BufU16(pc.bias + uint64_t(bi) * uint64_t(pc.bias_batch) * 2u);
    v += pc.beta * bf16_to_f32(uint(Bias.v[int(gi) * pc.bias_row + int(gj) * pc.bias_col]));
  }
  C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = uint16_t(f32_to_bf16(v));
#else
  BufF16 C = BufF16(pc.c + uint64_t(bi) * uint64_t(pc.c_batch) * 2u);
  if ((pc.flags & GEMM_BIAS) != 0u) {
    BufF16 Bias = BufF16(pc.bias + uint64_t(bi) * uint64_t(pc.bias_batch) * 2u);
    v += pc.beta * float(Bias.v[int(gi) * pc.bias_row + int(gj) * pc.bias_col]);
  }
  C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = float16_t(v);
#endif
}

// Staging runs in two halves so that the next K step's global loads are in
// flight while this one multiplies (as in gemm.comp): fetch_a() loads this
// thread's units of A[row0 .. row0+BM) x [k0 .. k0+BK), zero outside m and
// k_end, into g_a, and put_a() stores them into As; B likewise. A unit is AU (BU)
// elements along the operand's fast side, eight where it loads eight at a time, else
// four; it is held and stored as quads.
const uint AU = A_VEC == 8u ? 8u : 4u, BU = B_VEC == 8u ? 8u : 4u;
const uint AUN = BM * BK / AU / WG;  // units per thread of a tile
const uint BUN = BK * BN / BU / WG;
ELEM4 g_a[AUN * AU / 4u];
ELEM4 g_b[BUN * BU / 4u];

// Unit q's place in the A tile: its first row i and column kk.
uvec2 a_unit(uint q) {
  return A_MFAST != 0u ? uvec2(q % (BM / AU) * AU, q / (BM / AU))
                       : uvec2(q / (BK / AU), q % (BK / AU) * AU);
}
// Unit q's place in the B tile: its first row kk and column j.
uvec2 b_unit(uint q) {
  return B_KFAST != 0u ? uvec2(q % (BK / BU) * BU, q / (BK / BU))
                       : uvec2(q / (BN / BU), q % (BN / BU) * BU);
}

void fetch_a(uint bi, uint row0, uint k0, uint k_end) {
  uint64_t base = pc.a + uint64_t(int64_t(bi) * pc.a_batch + a_skip) * 2u;
  BufE A = BufE(base);
  const uint di = A_MFAST, dk = 1u - A_MFAST;  // the unit's direction
  [[unroll]] for (uint t = 0u; t < AUN; ++t) {
    uvec2 at = a_unit(gl_LocalInvocationID.x + t * WG);
    uint gi = row0 + at.x, gk = k0 + at.y;
    const uint h0 = t * (AU / 4u);
    if (A_VEC > 1u && gi + (AU - 1u) * di < lim_m && gk + (AU - 1u) * dk < k_end) {
      uint64_t address = base + uint64_t(int(gi) * pc.a_row + int(gk) * pc.a_col) * 2u;
      if (AU == 8u) {
        uvec4 x = BufU32x4(address).v[0];
        g_a[h0] = quad_of(x.xy);
        g_a[h0 + 1u] = quad_of(x.zw);
      } else {
        g_a[h0] = BufE4(address).v[0];
      }
    } else {
      [[unroll]] for (uint u = 0u; u < AU; ++u) {
        uint ri = gi + u * di, rk = gk + u * dk;
        ELEM x = ELEM(0);
        if (ri < lim_m && rk < k_end) x = A.v[int(ri) * pc.a_row + int(rk) * pc.a_col];
        g_a[h0 + u / 4u][u % 4u] = x;
      }
    }
  }
}

void put_a(uint st) {
  [[unroll]] for (uint t = 0u; t < AUN; ++t) {
    uvec2 at = a_unit(gl_LocalInvocationID.x + t * WG);
    uint first = st * A_STAGE + (A_MFAST != 0u ? at.y * ATS + at.x : at.x * AST + at.y);
    [[unroll]] for (uint h = 0u; h < AU / 4u; ++h) As[first / 4u + h] = g_a[t * (AU / 4u) + h];
  }
}

void fetch_b(uint bi, uint col0, uint k0, uint k_end) {
  uint64_t base = pc.b + uint64_t(int64_t(bi) * pc.b_batch + b_skip) * 2u;
  BufE B = BufE(base);
  const uint dk = B_KFAST, dj = 1u - B_KFAST;
  [[unroll]] for (uint t = 0u; t < BUN; ++t) {
    uvec2 at = b_unit(gl_LocalInvocationID.x + t * WG);
    uint gk = k0 + at.x, gj = col0 + at.y;
    const uint h0 = t * (BU / 4u);
    if (B_VEC > 1u && gk + (BU - 1u) * dk < k_end && gj + (BU - 1u) * dj < lim_n) {
      uint64_t address = base + uint64_t(int(gk) * pc.b_row + int(gj) * pc.b_col) * 2u;
      if (BU == 8u) {
        uvec4 x = BufU32x4(address).v[0];
        g_b[h0] = quad_of(x.xy);
        g_b[h0 + 1u] = quad_of(x.zw);
      } else {
        g_b[h0] = BufE4(address).v[0];
      }
    } else {
      [[unroll]] for (uint u = 0u; u < BU; ++u) {
        uint rk = gk + u * dk, rj = gj + u * dj;
        ELEM x = ELEM(0);
        if (rk < k_end && rj < lim_n) x = B.v[int(rk) * pc.b_row + int(rj) * pc.b_col];
        g_b[h0 + u / 4u][u % 4u] = x;
      }
    }
  }
}

void put_b(uint st) {
  [[unroll]] for (uint t = 0u; t < BUN; ++t) {
    uvec2 at = b_unit(gl_LocalInvocationID.x + t * WG);
    uint first = st * B_STAGE + (B_KFAST != 0u ? at.y * BTS + at.x : at.x * BST + at.y);
    [[unroll]] for (uint h = 0u; h < BU / 4u; ++h) Bs[first / 4u + h] = g_b[t * (BU / 4u) + h];
  }
}

void main() {
  whole_product();
  uint tile = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint tiles_n = (pc.n + BN - 1u) / BN;
  uint tiles_m = (pc.m + BM - 1u) / BM;
  uint per_slice = launched_tiles(tiles_m, tiles_n);
  bool split = (pc.flags & GEMM_SPLIT) != 0u;
  uint slices = split ? pc.splits : 1u;
  if (tile >= per_slice * slices) return;  // uniform across the workgroup
  // A driver running other subgroup sizes than this pipeline was made for
  // would compute garbage: write nothing, which the start-up check detects.
  if (gl_NumSubgroups != WARPS) return;
  uint slice = tile / per_slice;
  tile -= slice * per_slice;
  uint k_len = split ? ((pc.k + slices - 1u) / slices + BK - 1u) / BK * BK : pc.k;
  uint k_begin = slice * k_len;
  uint k_end = min(pc.k, k_begin + k_len);
  uint bi, tm, tn;
  if (!place_tile(tile, tiles_m, tiles_n, bi, tm, tn, k_begin, k_end)) return;  // uniform
  uint row0 = tm * BM, col0 = tn * BN;
  uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint wm0 = warp % WARPS_M * WM, wn0 = warp / WARPS_M * WN;

#ifdef EMULATED
  const uint EPL = MM * MN / SG;  // fragment elements per lane
  float acc[FM * FN * EPL];
  for (uint e = 0u; e < FM * FN * EPL; ++e) acc[e] = 0.0;
#else
  coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator> acc[FM * FN];
  [[unroll]] for (uint f = 0u; f < FM * FN; ++f)
    acc[f] = coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator>(0.0);
#endif

  if (k_begin < k_end) {
    fetch_a(bi, row0, k_begin, k_end);
    fetch_b(bi, col0, k_begin, k_end);
    put_a(0u);
    put_b(0u);
    barrier();
  }
  uint st = 0u;  // the stage this step multiplies from
  for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
    bool more = k0 + BK < k_end;  // uniform
    if (more) {
      fetch_a(bi, row0, k0 + BK, k_end);
      fetch_b(bi, col0, k0 + BK, k_end);
    }
    uint a_st = st * A_STAGE, b_st = st * B_STAGE;
    // Where element (row, k) of A and (k, col) of B are staged (see AST above).
    const uint a_row = A_MFAST != 0u ? 1u : AST, a_k = A_MFAST != 0u ? ATS : 1u;
    const uint b_k = B_KFAST != 0u ? 1u : BST, b_col = B_KFAST != 0u ? BTS : 1u;
    [[unroll]] for (uint kk = 0u; kk < BK; kk += MK) {
#ifdef EMULATED
      [[unroll]] for (uint f = 0u; f < FM * FN; ++f) {
        uint ar = wm0 + f / FN * MM, bc = wn0 + f % FN * MN;
        for (uint e = 0u; e < EPL; ++e) {
          uint idx = lane + e * SG, r = idx / MN, c = idx % MN;
          float s = acc[f * EPL + e];
          for (uint t = 0u; t < MK; ++t)
            s = fma(elem_value(staged(As, a_st + (ar + r) * a_row + (kk + t) * a_k)),
                    elem_value(staged(Bs, b_st + (kk + t) * b_k + (bc + c) * b_col)), s);
          acc[f * EPL + e] = s;
        }
      }
#else
      coopmat<float16_t, gl_ScopeSubgroup, MM, MK, gl_MatrixUseA> fa[FM];
      coopmat<float16_t, gl_ScopeSubgroup, MK, MN, gl_MatrixUseB> fb[FN];
      [[unroll]] for (uint i = 0u; i < FM; ++i) {
        uint at = (a_st + (wm0 + i * MM) * a_row + kk * a_k) / 4u;
        if (A_MFAST != 0u)
          coopMatLoad(fa[i], As, at, ATS / 4u, gl_CooperativeMatrixLayoutColumnMajor);
        else
          coopMatLoad(fa[i], As, at, AST / 4u, gl_CooperativeMatrixLayoutRowMajor);
      }
      [[unroll]] for (uint j = 0u; j < FN; ++j) {
        uint at = (b_st + kk * b_k + (wn0 + j * MN) * b_col) / 4u;
        if (B_KFAST != 0u)
          coopMatLoad(fb[j], Bs, at, BTS / 4u, gl_CooperativeMatrixLayoutColumnMajor);
        else
          coopMatLoad(fb[j], Bs, at, BST / 4u, gl_CooperativeMatrixLayoutRowMajor);
      }
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i * FN + j] = coopMatMulAdd(fa[i], fb[j], acc[i * FN + j]);
#endif
    }
    // The other stage was last read before the previous barrier: fill it now.
    if (more) {
      put_a(st ^ 1u);
      put_b(st ^ 1u);
    }
    barrier();
    st ^= 1u;
  }

  uint cbase = warp * MM * CST;
  BufF32 parts = BufF32(pc.c);
  uint part_base = (slice * pc.batch + bi) * pc.m * pc.n;
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
    uint r0 = row0 + wm0 + f / FN * MM, c0 = col0 + wn0 + f % FN * MN;
    for (uint idx = lane; idx < MM * MN; idx += SG) {
      uint gi = r0 + idx / MN, gj = c0 + idx % MN;
      if (gi >= lim_m || gj >= lim_n) continue;
      float v = Cs[cbase + idx / MN * CST + idx % MN];
      if (split)
        parts.v[part_base + gi * pc.n + gj] = v;
      else
        store_c(bi, gi, gj, pc.alpha * v);
    }
    subgroupBarrier();  // the next fragment reuses the staging
  }
}
