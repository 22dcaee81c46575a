#version 450
// Convolution as an implicit GEMM (conv_gather.glsl: the tiles, gathers and stores)
// with shared-memory tiles and fp32 arithmetic, for every float dtype. Same operands
// and layouts as conv.comp (which handles few channels per group, where a 32-row tile
// would be mostly empty); fp16 and bf16 go to conv_coopmat.comp where the GPU's matrix
// units are in use.
// Each workgroup computes a BM x BM tile of C (32 with 64 threads, or 64 with 256 on
// GPUs, 4 x 4 per thread, in K steps of 16; or 128 with 256, 8 x 8 per thread, in K
// steps of 8); fp32 accumulation. A thread's rows (and columns) are groups of four, NT groups apart.
// With CONV_SUM a thread per weight-grad output adds the split-K partials (conv_gather.glsl)
// in order from scratch at p0 into dst; conv_coopmat.comp's partials too.
// The next K step's tile elements are loaded into registers before the current step's
// products, so their global-memory latency overlaps the arithmetic (register prefetch,
// as in gemm.comp). Not done: vectorised loads (the gathers are rarely contiguous).
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "float_store.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 64;  // (BM / TT)^2 threads of TT x TT outputs
layout(constant_id = 2) const uint BM = 32;
layout(constant_id = 3) const uint TT = 4;   // 4 or 8
layout(constant_id = 4) const uint TK = 16;  // K step: 16, or 8 for the 128 tile
const uint TM = BM, TN = BM, NT = BM / TT;
const uint TQ = TT / 4;  // groups of four rows (columns) per thread

#include "conv_push.h"

#define GATHER_T float
#define gather_ld(P, O) LD(P, O)
#define GATHER_ZERO 0.0
#include "conv_gather.glsl"

// Staged [k][m] and [k][n] as vec4s: a thread's four rows (columns) are one 16-byte
// read, so a 4 x 4 block of multiply-adds costs two shared reads instead of eight.
// Rows are padded by a vec4: stage() writes A down its k column. Two stages: a K step
// multiplies from one while the next step's elements are stored into the other, so one
// barrier per step suffices.
shared vec4 sA[2][TK][TM / 4 + 1];
shared vec4 sB[2][TK][TN / 4 + 1];

// Each thread stages R elements of each tile per K step (WG is a multiple of TK and
// TN, so its A column and B column stay fixed): 8 for BM 32 with 64 threads, 4 for 64
// with 256, and 4 for 128 with 256 in steps of 8.
const uint R = (TM * TK) / WG;
float ra[8], rb[8];

// Loads this thread's elements of the tiles of the K step at k0 into ra / rb: A rows
// from m0, its A column as digits a_col, its B rows from b_row (digits) in steps of
// b_next, in its B column col.
void fetch(uint k0, uint k_end, uint m0, uint M, uint col, uint N, Digits a_col, Digits b_row,
           Digits b_next, ivec3 b_sz) {
  uint tid = gl_LocalInvocationID.x;
  Digits kb_d = b_row;
  [[unroll]] for (uint r = 0; r < R; ++r) {
    uint e = tid + r * WG;
    uint kk = e % TK, mm = e / TK;  // A rows are contiguous in k for the forward
    uint m = m0 + mm, k = k0 + kk;
    ra[r] = (m < M && k < k_end) ? load_a(m, k, a_col) : 0.0;
    uint kb = e / TN, k2 = k0 + kb;
    rb[r] = (col < N && k2 < k_end) ? load_b(kb_d) : 0.0;
    kb_d = advance(kb_d, b_next, b_sz);
  }
}

void stage(uint st, uint nn) {
  uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0; r < R; ++r) {
    uint e = tid + r * WG;
    uint m = e / TK;
    sA[st][e % TK][m / 4u][m % 4u] = ra[r];
    sB[st][e / TN][nn / 4u][nn % 4u] = rb[r];
  }
}

// The output chunk of main()'s epilogue, element e of 4 NT x NT quads: the first half in
// sA, the second in sB, each read as its flat [2][TK][TM / 4 + 1] layout.
const uint SROW = TM / 4 + 1;
const uint CHUNK_HALF = 2u * NT * NT;
void chunk_put(uint e, vec4 v) {
  if (e < CHUNK_HALF) {
    sA[e / (TK * SROW)][e / SROW % TK][e % SROW] = v;
  } else {
    e -= CHUNK_HALF;
    sB[e / (TK * SROW)][e / SROW % TK][e % SROW] = v;
  }
}
vec4 chunk_get(uint e) {
  if (e < CHUNK_HALF) return sA[e / (TK * SROW)][e / SROW % TK][e % SROW];
  e -= CHUNK_HALF;
  return sB[e / (TK * SROW)][e / SROW % TK][e % SROW];
}

void main() {
  conv_sizes();
  uint wid = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if ((pc.flags & CONV_SUM) != 0u) {
    uint total = pc.co * cig * kvol;  // weight-grad outputs
    uint idx = wid * WG + gl_LocalInvocationID.x;
    if (idx >= total) return;
    BufF32 parts = BufF32(pc.p0);
    float s = 0.0;
    for (uint sl = 0u; sl < pc.splits; ++sl) s += parts.v[sl * total + idx];
    STORE(pc.dst, idx, s);
    return;
  }
  ConvTile t;
  if (!conv_tile(wid, TM, TN, TK, t)) return;  // uniform across the workgroup
  uint M = t.M, N = t.N, m0 = t.m0, n0 = t.n0, k_begin = t.k_begin, k_end = t.k_end;
  uint tid = gl_LocalInvocationID.x, tx = tid % NT, ty = tid / NT;
  // ACCQ(i, q)[w]: row i, column 4 * q + w of this thread's TT x TT outputs (their
  // places in the tile: the stores below), one array of TT vec4s per column group, as in
  // gemm.comp (no register array over eight vec4s).
  vec4 acc0[TT], acc1[TT];
#define ACCQ(I, Q) ((Q) == 0u ? acc0[I] : acc1[I])
  [[unroll]] for (uint i = 0; i < TT; ++i) {
    acc0[i] = vec4(0.0);
    acc1[i] = vec4(0.0);
  }
  // B is loaded contiguous along columns (positions): this thread's column is fixed,
  // and its rows are tid / TN + r * WG / TN. A's column is k0 + tid % TK.
  uint nn = tid % TN, col = n0 + nn;
  if (col < N) prepare_column(col);
  const ivec3 b_sz = b_digits_box(), a_sz = a_digits_box();
  Digits b_row = split(k_begin + tid / TN, b_sz), b_next = split(WG / TN, b_sz);
  Digits b_step = split(TK, b_sz);
  Digits a_col = split(k_begin + tid % TK, a_sz), a_step = split(TK, a_sz);
  if (k_begin < k_end) {
    fetch(k_begin, k_end, m0, M, col, N, a_col, b_row, b_next, b_sz);
    stage(0u, nn);
    barrier();
  }
  uint st = 0u;  // the stage this step multiplies from
  for (uint k0 = k_begin; k0 < k_end; k0 += TK) {
    b_row = advance(b_row, b_step, b_sz);
    a_col = advance(a_col, a_step, a_sz);
    bool more = k0 + TK < k_end;  // uniform
    if (more) fetch(k0 + TK, k_end, m0, M, col, N, a_col, b_row, b_next, b_sz);
    [[unroll]] for (uint kk = 0; kk < TK; ++kk) {
      vec4 a[TQ], b[TQ];
      [[unroll]] for (uint q = 0; q < TQ; ++q) {
        a[q] = sA[st][kk][q * NT + ty];
        b[q] = sB[st][kk][q * NT + tx];
      }
      [[unroll]] for (uint i = 0; i < TT; ++i) {
        acc0[i] = fma(vec4(a[i / 4][i % 4]), b[0], acc0[i]);
        if (TQ > 1u) acc1[i] = fma(vec4(a[i / 4][i % 4]), b[TQ - 1u], acc1[i]);
      }
    }
    // The other stage was last read before the previous barrier: fill it now.
    if (more) stage(st ^ 1u, nn);
    barrier();
    st ^= 1u;
  }
  if (TT == 4u) {  // 4 x 4 outputs per thread: stored directly
    [[unroll]] for (uint i = 0; i < TT; ++i) {
      uint m = m0 + ty * 4 + i;
      if (m >= M) continue;
      [[unroll]] for (uint j = 0; j < TT; ++j) {
        uint col = n0 + tx * 4 + j;
        if (col < N) store_out(t, m, col, acc0[i][j]);
      }
    }
    return;
  }
  // 8 x 8 outputs per thread leave through shared memory, a chunk of 4 NT rows by NT
  // quads at a time (one row group of every thread by one column group), as in gemm.comp:
  // the accumulators are read only by unrolled one-store loops, so they stay in registers
  // whatever the compiler makes of store_out's index arithmetic; and a warp's global
  // writes cover consecutive positions. The chunk's halves reuse sA and sB (each holds
  // one for the 128 tile's TK of 8), which the K loop's last barrier freed.
  [[unroll]] for (uint r = 0u; r < TQ; ++r) {
    [[unroll]] for (uint c = 0u; c < TQ; ++c) {
      [[unroll]] for (uint u = 0u; u < 4u; ++u) chunk_put((ty * 4u + u) * NT + tx, ACCQ(r * 4u + u, c));
      barrier();
      for (uint e = tid; e < 2u * CHUNK_HALF; e += WG) {
        vec4 v = chunk_get(e);
        uint m = m0 + r * 4u * NT + e / NT;
        uint col0 = n0 + (c * NT + e % NT) * 4u;
        if (m >= M) continue;
        [[unroll]] for (uint w = 0u; w < 4u; ++w) {
          if (col0 + w >= N) break;
          store_out(t, m, col0 + w, v[w]);
        }
      }
      barrier();
    }
  }
}
