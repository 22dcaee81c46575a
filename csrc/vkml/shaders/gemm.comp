#version 450
// Batched GEMM, C = alpha * A @ B + beta * Bias, with arbitrary element strides
// on every operand (transposed operands need no copy) and fp32 accumulation.
// Integer variants accumulate in int64 and truncate on the store: the result
// wraps exactly as the CPU's arithmetic in the element type does. Their alpha
// and beta are int32 values carried in the bits of the float push constants.
//
// A workgroup computes a BM x BN tile of C, walking K in BK-deep slices staged
// in shared memory; each thread owns TM x TN outputs, spread over the tile by
// the thread grid so that neighbouring threads read neighbouring shared memory
// (in groups of four for the float variants, see As4 below). Tiles of all batches are numbered in one flat grid
// (x, spilling into y), so no grid dimension limit applies.
//
// Split-K (float variants, for outputs too small to fill the GPU): with
// GEMM_SPLIT the grid repeats the tiles once per K slice and each workgroup writes
// its raw fp32 partial sums to scratch [splits][batch][m][n] at pc.c; a second
// dispatch of the same pipeline with GEMM_SPLIT_SUM then runs a thread per output,
// adding the slices in order (deterministic) and applying alpha, beta and the
// bias on the way to C. That pass finds the scratch at pc.a.
//
// Grouped products (GEMM_GROUP_M / _N / _K, gemm_push.h): each batch reads its range of
// m, n or k from the offsets on the device, so a mixture of experts' tokens sorted by
// expert need no host wait; gemm_groups.glsl numbers the tiles group by group.
//
// Specialization constants: 0 = BM, 1 = BN, 2 = BK, 3 = threads (local size),
// 4 = TN (outputs per thread along n); TM = BM * BN / (threads * TN).
//! dtypes f32 f16 bf16 f64 i64 i32 i16 i8 u8
//! dtypes i8 suffix=i32 -DC_I32
#ifdef ST_BF16
#define NEED_I16  // bf16 bits move through int16 arithmetic
#endif
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint WG = 256;

layout(constant_id = 4) const uint TN = 4;
const uint TM = BM * BN / (WG * TN);
const uint NTX = BN / TN;  // threads along n
const uint NTY = BM / TM;  // threads along m

#if defined(ST_F16)
#define BUF BufF16
#define ESIZE 2
#define ACC float
#elif defined(ST_BF16)
#define BUF BufU16
#define ESIZE 2
#define ACC float
#elif defined(ST_F64)
// float64: the integer variants' layout (element-wide shared slices, no split-K),
// with fused multiply-adds and float alpha and beta (the host passes others apart).
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#define BUF BufF64
#define ESIZE 8
#define ACC double
#define ELEM double
#define FLOAT_ELEM
#elif defined(ST_I64)
#define BUF BufI64
#define ESIZE 8
#define ACC int64_t
#define ELEM int64_t
#elif defined(ST_I32)
#define BUF BufI32
#define ESIZE 4
#define ACC int64_t
#define ELEM int
#elif defined(ST_I16)
#define BUF BufI16
#define ESIZE 2
#define ACC int64_t
#define ELEM int16_t
#elif defined(ST_I8)
#define BUF BufI8
#define ESIZE 1
#define ACC int64_t
#define ELEM int8_t
#elif defined(ST_U8)
#define BUF BufU8
#define ESIZE 1
#define ACC int64_t
#define ELEM uint8_t
#else
#define BUF BufF32
#define ESIZE 4
#define ACC float
#endif
// C and the bias: the operands' dtype, or int32 for int8 operands with C_I32
// (torch._int_mm), whose sums are kept whole rather than wrapped to int8.
#if defined(C_I32)
#define CBUF BufI32
#define CSIZE 4
#define CELEM int
#else
#define CBUF BUF
#define CSIZE ESIZE
#define CELEM ELEM
#endif
// An element as the accumulator type (bfloat16 is stored as its upper 16 bits).
#if defined(ST_BF16)
#define LOADV(x) bf16_to_f32(uint(x))
#else
#define LOADV(x) ACC(x)
#endif
#if defined(ELEM) && !defined(FLOAT_ELEM)
#define MAD(a, b, c) ((c) + (a) * (b))
#define SCALAR(x) ACC(floatBitsToInt(x))
#else
#define MAD(a, b, c) fma(a, b, c)
#define SCALAR(x) ACC(x)
#endif

#include "gemm_push.h"

// The staged slices, [k][m] and [k][n]. Float variants keep them as vec4s and each
// thread owns TM / 4 groups of four consecutive rows (and TN / 4 of columns), so one
// 16-byte shared read feeds four rows: a 4 x 4 block of multiply-adds costs two
// reads instead of eight, which keeps shared memory from capping the FMA rate (the
// large tile's scalar reads were the bound on the H200). Rows are padded by one
// vec4 (float variants) or one element (integer ones) against bank conflicts. Two
// stages of each: a K step multiplies from one while the next step's slices are stored
// into the other, so one barrier per step suffices.
#if !defined(ELEM)
const uint AS4 = BM / 4 + 1;
const uint BS4 = BN / 4 + 1;
shared vec4 As4[2 * BK * AS4];
shared vec4 Bs4[2 * BK * BS4];
#define PUT_A(KK, I, V) As4[(KK) * AS4 + (I) / 4u][(I) % 4u] = (V)
#define PUT_B(KK, J, V) Bs4[(KK) * BS4 + (J) / 4u][(J) % 4u] = (V)
// Output row of a thread's i-th row (column likewise): group i / 4 of its groups.
#define OUT_ROW(TY, I) ((((I) / 4u) * NTY + (TY)) * 4u + (I) % 4u)
#define OUT_COL(TX, J) ((((J) / 4u) * NTX + (TX)) * 4u + (J) % 4u)
#else
const uint AS = BM + 1;
const uint BS = BN + 1;
shared ACC As[2 * BK * AS];
shared ACC Bs[2 * BK * BS];
#define PUT_A(KK, I, V) As[(KK) * AS + (I)] = (V)
#define PUT_B(KK, J, V) Bs[(KK) * BS + (J)] = (V)
#define OUT_ROW(TY, I) ((TY) + (I) * NTY)
#define OUT_COL(TX, J) ((TX) + (J) * NTX)
#endif

#include "gemm_groups.glsl"

void store_c(uint bi, uint gi, uint gj, ACC v) {
  CBUF C = CBUF(pc.c + uint64_t(bi) * uint64_t(pc.c_batch) * CSIZE);
  gi += off_m;
  gj += off_n;
  if ((pc.flags & GEMM_BIAS) != 0u) {
    CBUF Bias = CBUF(pc.bias + uint64_t(bi) * uint64_t(pc.bias_batch) * CSIZE);
    v += SCALAR(pc.beta) * LOADV(Bias.v[int(gi) * pc.bias_row + int(gj) * pc.bias_col]);
  }
#if defined(ST_F16)
  C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = float16_t(v);
#elif defined(ST_BF16)
  C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = uint16_t(f32_to_bf16(v));
#elif defined(ELEM)
  C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = CELEM(v);
#else
  C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = v;
#endif
}

// Four elements along the operand's contiguous side, as the accumulator type.
#if defined(ST_F32)
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BufQ { vec4 v[]; };
#define QUAD(x) (x)
#elif defined(ST_F16)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufQ { f16vec4 v[]; };
#define QUAD(x) vec4(x)
#elif defined(ST_BF16)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufQ { u16vec4 v[]; };
vec4 QUAD(u16vec4 q) {
  return vec4(bf16_to_f32(uint(q.x)), bf16_to_f32(uint(q.y)), bf16_to_f32(uint(q.z)),
              bf16_to_f32(uint(q.w)));
}
#endif

// Staging runs in two halves so that one K step's global loads are in flight while
// the previous step multiplies: fetch_a() loads this thread's elements of the next A
// tile (A[row0 .. row0+BM) x [k0 .. k0+BK), zero outside m and k_end) into g_a, and
// put_a(st) stores them into stage st of As; B likewise. With GEMM_A_VEC (float variants) a thread
// moves four elements along A's contiguous side with one load, element-wise where the
// quad crosses an edge; g_a then holds AE / 4 quads.
const uint AE = BM * BK / WG;  // elements per thread of a tile (a multiple of 4)
const uint BE = BK * BN / WG;
ACC g_a[AE];
ACC g_b[BE];

void fetch_a(uint64_t base, uint row0, uint k0, uint k_end, bool full) {
  BUF A = BUF(base);
  bool mfast = (pc.flags & GEMM_A_MFAST) != 0u;
  uint tid = gl_LocalInvocationID.x;
#if !defined(ELEM)
  if ((pc.flags & GEMM_A_VEC) != 0u) {
    uint di = mfast ? 1u : 0u, dk = 1u - di;
    [[unroll]] for (uint t = 0u; t < AE / 4u; ++t) {
      uint q = tid + t * WG;
      uint i = mfast ? q % (BM / 4u) * 4u : q / (BK / 4u);
      uint kk = mfast ? q / (BM / 4u) : q % (BK / 4u) * 4u;
      uint gi = row0 + i, gk = k0 + kk;
      vec4 v = vec4(0.0);
      if (full || (gi + 3u * di < lim_m && gk + 3u * dk < k_end)) {
        int off = int(gi) * pc.a_row + int(gk) * pc.a_col;
        v = QUAD(BufQ(base + uint64_t(off) * ESIZE).v[0]);
      } else {
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
          uint ri = gi + u * di, rk = gk + u * dk;
          if (ri < lim_m && rk < k_end) v[u] = LOADV(A.v[int(ri) * pc.a_row + int(rk) * pc.a_col]);
        }
      }
      [[unroll]] for (uint u = 0u; u < 4u; ++u) g_a[t * 4u + u] = v[u];
    }
    return;
  }
#endif
  [[unroll]] for (uint t = 0u; t < AE; ++t) {
    uint e = tid + t * WG;
    uint i = mfast ? e % BM : e / BK;
    uint kk = mfast ? e / BM : e % BK;
    uint gi = row0 + i, gk = k0 + kk;
    ACC v = ACC(0);
    if (full || (gi < lim_m && gk < k_end)) v = LOADV(A.v[int(gi) * pc.a_row + int(gk) * pc.a_col]);
    g_a[t] = v;
  }
}

void put_a(uint st) {
  bool mfast = (pc.flags & GEMM_A_MFAST) != 0u;
  uint tid = gl_LocalInvocationID.x;
#if !defined(ELEM)
  if ((pc.flags & GEMM_A_VEC) != 0u) {
    uint di = mfast ? 1u : 0u, dk = 1u - di;
    [[unroll]] for (uint t = 0u; t < AE / 4u; ++t) {
      uint q = tid + t * WG;
      uint i = mfast ? q % (BM / 4u) * 4u : q / (BK / 4u);
      uint kk = mfast ? q / (BM / 4u) : q % (BK / 4u) * 4u;
      if (mfast) {
        As4[(st * BK + kk) * AS4 + i / 4u] =
            vec4(g_a[t * 4u], g_a[t * 4u + 1u], g_a[t * 4u + 2u], g_a[t * 4u + 3u]);
      } else {
        [[unroll]] for (uint u = 0u; u < 4u; ++u) PUT_A(st * BK + kk + u, i, g_a[t * 4u + u]);
      }
    }
    return;
  }
#endif
  [[unroll]] for (uint t = 0u; t < AE; ++t) {
    uint e = tid + t * WG;
    PUT_A(st * BK + (mfast ? e / BM : e % BK), mfast ? e % BM : e / BK, g_a[t]);
  }
}

void fetch_b(uint64_t base, uint col0, uint k0, uint k_end, bool full) {
  BUF B = BUF(base);
  bool kfast = (pc.flags & GEMM_B_KFAST) != 0u;
  uint tid = gl_LocalInvocationID.x;
#if !defined(ELEM)
  if ((pc.flags & GEMM_B_VEC) != 0u) {
    uint dk = kfast ? 1u : 0u, dj = 1u - dk;
    [[unroll]] for (uint t = 0u; t < BE / 4u; ++t) {
      uint q = tid + t * WG;
      uint j = kfast ? q / (BK / 4u) : q % (BN / 4u) * 4u;
      uint kk = kfast ? q % (BK / 4u) * 4u : q / (BN / 4u);
      uint gj = col0 + j, gk = k0 + kk;
      vec4 v = vec4(0.0);
      if (full || (gk + 3u * dk < k_end && gj + 3u * dj < lim_n)) {
        int off = int(gk) * pc.b_row + int(gj) * pc.b_col;
        v = QUAD(BufQ(base + uint64_t(off) * ESIZE).v[0]);
      } else {
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
          uint rk = gk + u * dk, rj = gj + u * dj;
          if (rk < k_end && rj < lim_n) v[u] = LOADV(B.v[int(rk) * pc.b_row + int(rj) * pc.b_col]);
        }
      }
      [[unroll]] for (uint u = 0u; u < 4u; ++u) g_b[t * 4u + u] = v[u];
    }
    return;
  }
#endif
  [[unroll]] for (uint t = 0u; t < BE; ++t) {
    uint e = tid + t * WG;
    uint j = kfast ? e / BK : e % BN;
    uint kk = kfast ? e % BK : e / BN;
    uint gj = col0 + j, gk = k0 + kk;
    ACC v = ACC(0);
    if (full || (gj < lim_n && gk < k_end)) v = LOADV(B.v[int(gk) * pc.b_row + int(gj) * pc.b_col]);
    g_b[t] = v;
  }
}

void put_b(uint st) {
  bool kfast = (pc.flags & GEMM_B_KFAST) != 0u;
  uint tid = gl_LocalInvocationID.x;
#if !defined(ELEM)
  if ((pc.flags & GEMM_B_VEC) != 0u) {
    uint dk = kfast ? 1u : 0u, dj = 1u - dk;
    [[unroll]] for (uint t = 0u; t < BE / 4u; ++t) {
      uint q = tid + t * WG;
      uint j = kfast ? q / (BK / 4u) : q % (BN / 4u) * 4u;
      uint kk = kfast ? q % (BK / 4u) * 4u : q / (BN / 4u);
      if (!kfast) {
        Bs4[(st * BK + kk) * BS4 + j / 4u] =
            vec4(g_b[t * 4u], g_b[t * 4u + 1u], g_b[t * 4u + 2u], g_b[t * 4u + 3u]);
      } else {
        [[unroll]] for (uint u = 0u; u < 4u; ++u) PUT_B(st * BK + kk + u, j, g_b[t * 4u + u]);
      }
    }
    return;
  }
#endif
  [[unroll]] for (uint t = 0u; t < BE; ++t) {
    uint e = tid + t * WG;
    PUT_B(st * BK + (kfast ? e % BK : e / BN), kfast ? e / BK : e % BN, g_b[t]);
  }
}

#if !defined(ELEM)
// One fp32 result of this workgroup's tile: its raw partial sum to the split-K scratch
// (part_base: this slice and batch), or alpha times it to C.
void put_result(bool split, uint part_base, uint bi, uint gi, uint gj, float alpha, float v) {
  if (split) {
    BufF32(pc.c).v[part_base + gi * pc.n + gj] = v;
  } else {
    store_c(bi, gi, gj, alpha * v);
  }
}

void sum_slices(uint group) {
  uint id = group * WG + gl_LocalInvocationID.x;
  uint per = pc.m * pc.n;
  if (id >= per * pc.batch) return;
  BufF32 parts = BufF32(pc.a);
  float s = 0.0;
  for (uint sl = 0u; sl < pc.splits; ++sl) s += parts.v[sl * per * pc.batch + id];
  uint bi = id / per, rem = id % per;
  store_c(bi, rem / pc.n, rem % pc.n, SCALAR(pc.alpha) * s);
}
#endif

void main() {
  whole_product();
  uint tile = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
#if !defined(ELEM)
  if ((pc.flags & GEMM_SPLIT_SUM) != 0u) {
    sum_slices(tile);
    return;
  }
#endif
  uint tiles_n = (pc.n + BN - 1) / BN;
  uint tiles_m = (pc.m + BM - 1) / BM;
  uint per_slice = launched_tiles(tiles_m, tiles_n);
  bool split = (pc.flags & GEMM_SPLIT) != 0u;
  uint slices = split ? pc.splits : 1u;
  if (tile >= per_slice * slices) return;  // uniform across the workgroup
  uint slice = tile / per_slice;
  tile -= slice * per_slice;
  // This workgroup's K range: BK-aligned slices, the last one ragged.
  uint k_len = split ? ((pc.k + slices - 1u) / slices + BK - 1u) / BK * BK : pc.k;
  uint k_begin = slice * k_len;
  uint k_end = min(pc.k, k_begin + k_len);
  uint bi, tm, tn;
  if (!place_tile(tile, tiles_m, tiles_n, bi, tm, tn, k_begin, k_end)) return;  // uniform
  uint row0 = tm * BM, col0 = tn * BN;

  uint64_t A = pc.a + uint64_t(int64_t(bi) * pc.a_batch + a_skip) * ESIZE;
  uint64_t B = pc.b + uint64_t(int64_t(bi) * pc.b_batch + b_skip) * ESIZE;

  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % NTX, ty = tid / NTX;
#if !defined(ELEM)
  // Float variants: row i's column quad q in acc0[i] (q = 0) or acc1[i] (q = 1; TN is 4 or
  // 8), two arrays of TM vec4s rather than one of TM * TN / 4. On the H200 every block
  // of eight vec4s (4 x 8, 8 x 4) ran at 17-22 TFLOP/s and every 8 x 8 block, one array
  // of sixteen, at 2.3: a compiler that keeps only small arrays in registers would
  // explain it. Indices are constant once the loops are unrolled.
  const uint TQ = TN / 4u;
  vec4 acc0[TM], acc1[TM];
#define ACCQ(I, Q) ((Q) == 0u ? acc0[I] : acc1[I])
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    acc0[i] = vec4(0.0);
    acc1[i] = vec4(0.0);
  }
#else
  ACC acc[TM * TN];
  [[unroll]] for (uint i = 0; i < TM; ++i)
    [[unroll]] for (uint j = 0; j < TN; ++j) acc[i * TN + j] = ACC(0);
#endif

  bool full_mn = row0 + BM <= lim_m && col0 + BN <= lim_n;
  if (k_begin < k_end) {
    bool full = full_mn && k_begin + BK <= k_end;
    fetch_a(A, row0, k_begin, k_end, full);
    fetch_b(B, col0, k_begin, k_end, full);
    put_a(0u);
    put_b(0u);
    barrier();
  }
  uint st = 0u;  // the stage this step multiplies from
  for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
    uint kn = k0 + BK;  // the next step's loads, in flight during this one's products
    bool more = kn < k_end;  // uniform
    if (more) {
      bool full = full_mn && kn + BK <= k_end;
      fetch_a(A, row0, kn, k_end, full);
      fetch_b(B, col0, kn, k_end, full);
    }
    uint k_st = st * BK;
    [[unroll]] for (uint kk = 0; kk < BK; ++kk) {
#if !defined(ELEM)
      vec4 ra[TM / 4], rb[TN / 4];
      [[unroll]] for (uint i = 0; i < TM / 4; ++i) ra[i] = As4[(k_st + kk) * AS4 + i * NTY + ty];
      [[unroll]] for (uint j = 0; j < TN / 4; ++j) rb[j] = Bs4[(k_st + kk) * BS4 + j * NTX + tx];
      [[unroll]] for (uint i = 0; i < TM; ++i) {
        acc0[i] = fma(vec4(ra[i / 4][i % 4]), rb[0], acc0[i]);
        if (TQ > 1u) acc1[i] = fma(vec4(ra[i / 4][i % 4]), rb[TQ - 1u], acc1[i]);
      }
#else
      ACC ra[TM], rb[TN];
      [[unroll]] for (uint i = 0; i < TM; ++i) ra[i] = As[(k_st + kk) * AS + ty + i * NTY];
      [[unroll]] for (uint j = 0; j < TN; ++j) rb[j] = Bs[(k_st + kk) * BS + tx + j * NTX];
      [[unroll]] for (uint i = 0; i < TM; ++i)
        [[unroll]] for (uint j = 0; j < TN; ++j) acc[i * TN + j] = MAD(ra[i], rb[j], acc[i * TN + j]);
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

#if !defined(ELEM)
  uint part_base = (slice * pc.batch + bi) * pc.m * pc.n;
  ACC alpha = pc.k > 0u ? SCALAR(pc.alpha) : ACC(0);
  if (TM * TN <= 16u) {  // 4 x 4 outputs per thread: stored directly
    [[unroll]] for (uint i = 0; i < TM; ++i) {
      uint gi = row0 + OUT_ROW(ty, i);
      if (gi >= lim_m) continue;
      [[unroll]] for (uint j = 0; j < TN; ++j) {
        uint gj = col0 + OUT_COL(tx, j);
        if (gj < lim_n) put_result(split, part_base, bi, gi, gj, alpha, ACCQ(i, j / 4u)[j % 4u]);
      }
    }
    return;
  }
  // Larger blocks leave through shared memory, a chunk of CH_M x 4 CH_Q at a time: one
  // row group (four rows) of every thread by one column group. The accumulators are read
  // only in unrolled loops whose bodies are one shared store, so they stay in registers
  // whatever the compiler makes of the output loop below (its bounds checks, bias and
  // conversions); and a warp's global writes cover consecutive columns. (On the H200
  // the 128 x 128 tile ran ten times slower than 64 x 64 with direct stores and with
  // these alike: see the accumulators above.) The chunk's first half lives in As4, its
  // second in Bs4 (the launcher checks that they hold it); the K loop's last barrier
  // freed both.
  const uint CH_M = 4u * NTY, CH_Q = NTX, HALF = CH_M * CH_Q / 2u;
  [[unroll]] for (uint r = 0u; r < TM / 4u; ++r) {
    [[unroll]] for (uint c = 0u; c < TN / 4u; ++c) {
      [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        vec4 v = ACCQ(r * 4u + u, c);
        uint idx = (ty * 4u + u) * CH_Q + tx;
        if (idx < HALF) {
          As4[idx] = v;
        } else {
          Bs4[idx - HALF] = v;
        }
      }
      barrier();
      for (uint e = tid; e < CH_M * CH_Q; e += WG) {
        vec4 v = e < HALF ? As4[e] : Bs4[e - HALF];
        uint gi = row0 + r * CH_M + e / CH_Q;
        uint gj0 = col0 + (c * CH_Q + e % CH_Q) * 4u;
        if (gi >= lim_m) continue;
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
          if (gj0 + u >= lim_n) break;
          put_result(split, part_base, bi, gi, gj0 + u, alpha, v[u]);
        }
      }
      barrier();
    }
  }
#else
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    uint gi = row0 + OUT_ROW(ty, i);
    if (gi >= lim_m) continue;
    [[unroll]] for (uint j = 0; j < TN; ++j) {
      uint gj = col0 + OUT_COL(tx, j);
      if (gj >= lim_n) continue;
      store_c(bi, gi, gj, pc.k > 0u ? SCALAR(pc.alpha) * acc[i * TN + j] : ACC(0));
    }
  }
#endif
}
