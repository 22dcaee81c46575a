#version 450
// Batched GEMM, C = alpha * A @ B + beta * Bias, with arbitrary element strides
// on every operand (transposed operands need no copy) and fp32 accumulation.
// Integer variants accumulate in int64 and truncate on the store: the result
// wraps exactly as the CPU's arithmetic in the element type does. Their alpha
// and beta are int32 values carried in the bits of the float push constants.
//
// A workgroup computes a BM x BN tile of C, walking K in BK-deep slices staged
// in shared memory; each thread owns TM x TN outputs, strided by the thread
// grid so that shared-memory reads and global writes are contiguous across
// neighbouring threads. Tiles of all batches are numbered in one flat grid
// (x, spilling into y), so no grid dimension limit applies.
//
// Specialization constants: 0 = BM, 1 = BN, 2 = BK, 3 = threads (local size).
// TN is 4; TM = BM * BN / (threads * 4).
//! variant f32 -DST_F32
//! variant f16 -DST_F16 -DNEED_F16
//! variant i64 -DST_I64
//! variant i32 -DST_I32
//! variant u8 -DST_U8
#include "common.glsl"

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint WG = 256;

const uint TN = 4;
const uint TM = BM * BN / (WG * TN);
const uint NTX = BN / TN;  // threads along n
const uint NTY = BM / TM;  // threads along m

#if defined(ST_F16)
#define BUF BufF16
#define ESIZE 2
#define ACC float
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
#if defined(ELEM)
#define MAD(a, b, c) ((c) + (a) * (b))
#define SCALAR(x) ACC(floatBitsToInt(x))
#else
#define MAD(a, b, c) fma(a, b, c)
#define SCALAR(x) (x)
#endif

#define F_BIAS 1u      // beta != 0 and a bias is given
#define F_A_MFAST 2u   // A is contiguous along m: load the tile m-fastest
#define F_B_KFAST 4u   // B is contiguous along k: load the tile k-fastest

layout(push_constant, scalar) uniform PC {
  uint64_t a;
  uint64_t b;
  uint64_t c;
  uint64_t bias;
  int64_t a_batch;
  int64_t b_batch;
  int64_t c_batch;
  int64_t bias_batch;
  int a_row, a_col, b_row, b_col, c_row, c_col, bias_row, bias_col;
  uint m, n, k, batch;
  float alpha, beta;
  uint flags;
} pc;

// [k][m] and [k][n], rows padded by one so that tile stores walking k hit
// distinct banks.
const uint AS = BM + 1;
const uint BS = BN + 1;
shared ACC As[BK * AS];
shared ACC Bs[BK * BS];

void main() {
  uint tiles_n = (pc.n + BN - 1) / BN;
  uint tiles_m = (pc.m + BM - 1) / BM;
  uint tile = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (tile >= tiles_n * tiles_m * pc.batch) return;  // uniform across the workgroup
  uint tn = tile % tiles_n;
  uint rest = tile / tiles_n;
  uint tm = rest % tiles_m;
  uint bi = rest / tiles_m;
  uint row0 = tm * BM, col0 = tn * BN;

  BUF A = BUF(pc.a + uint64_t(bi) * uint64_t(pc.a_batch) * ESIZE);
  BUF B = BUF(pc.b + uint64_t(bi) * uint64_t(pc.b_batch) * ESIZE);

  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % NTX, ty = tid / NTX;
  ACC acc[TM * TN];
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TN; ++j) acc[i * TN + j] = ACC(0);

  bool a_mfast = (pc.flags & F_A_MFAST) != 0u;
  bool b_kfast = (pc.flags & F_B_KFAST) != 0u;
  bool full_mn = row0 + BM <= pc.m && col0 + BN <= pc.n;
  for (uint k0 = 0; k0 < pc.k; k0 += BK) {
    bool full = full_mn && k0 + BK <= pc.k;
    for (uint e = tid; e < BM * BK; e += WG) {
      uint i = a_mfast ? e % BM : e / BK;
      uint kk = a_mfast ? e / BM : e % BK;
      uint gi = row0 + i, gk = k0 + kk;
      ACC v = ACC(0);
      if (full || (gi < pc.m && gk < pc.k)) v = ACC(A.v[int(gi) * pc.a_row + int(gk) * pc.a_col]);
      As[kk * AS + i] = v;
    }
    for (uint e = tid; e < BK * BN; e += WG) {
      uint j = b_kfast ? e / BK : e % BN;
      uint kk = b_kfast ? e % BK : e / BN;
      uint gj = col0 + j, gk = k0 + kk;
      ACC v = ACC(0);
      if (full || (gj < pc.n && gk < pc.k)) v = ACC(B.v[int(gk) * pc.b_row + int(gj) * pc.b_col]);
      Bs[kk * BS + j] = v;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      ACC ra[TM], rb[TN];
      for (uint i = 0; i < TM; ++i) ra[i] = As[kk * AS + ty + i * NTY];
      for (uint j = 0; j < TN; ++j) rb[j] = Bs[kk * BS + tx + j * NTX];
      for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN; ++j) acc[i * TN + j] = MAD(ra[i], rb[j], acc[i * TN + j]);
    }
    barrier();
  }

  BUF C = BUF(pc.c + uint64_t(bi) * uint64_t(pc.c_batch) * ESIZE);
  BUF Bias = BUF(pc.bias + uint64_t(bi) * uint64_t(pc.bias_batch) * ESIZE);
  bool has_bias = (pc.flags & F_BIAS) != 0u;
  for (uint i = 0; i < TM; ++i) {
    uint gi = row0 + ty + i * NTY;
    if (gi >= pc.m) continue;
    for (uint j = 0; j < TN; ++j) {
      uint gj = col0 + tx + j * NTX;
      if (gj >= pc.n) continue;
      ACC v = pc.k > 0u ? SCALAR(pc.alpha) * acc[i * TN + j] : ACC(0);
      if (has_bias) v += SCALAR(pc.beta) * ACC(Bias.v[int(gi) * pc.bias_row + int(gj) * pc.bias_col]);
#if defined(ST_F16)
      C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = float16_t(v);
#elif defined(ELEM)
      C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = ELEM(v);
#else
      C.v[int(gi) * pc.c_row + int(gj) * pc.c_col] = v;
#endif
    }
  }
}
