#version 450
// A float32 matrix operand as bfloat16 pieces for ops/gemm_bf16x3.cpp: each element x
// becomes hi = bf16(x) (to nearest even) and lo = bf16(x - hi), the two carrying about
// 16 significant bits; x - hi is exact in fp32. Element (b, r, c) writes `pieces` values
// at dst[b * dst_batch + r * dst_row + c + p * piece_stride], each hi or lo by bit p of
// `lows`, so one pass lays out A as [hi | hi | lo] along k and B as [hi; lo; hi], and a
// bf16 product over the tripled K sums hi hi + hi lo + lo hi. An infinite (or
// bf16-overflowing) hi gets lo = 0, and the hi pieces after the first (those that meet
// the other operand's lo part) are 0 where hi is infinite: inf x lo would be NaN for a
// zero or opposite-signed lo, where float32 gives inf. Each piece
// is out_rows x out_cols, zero past src's rows and columns: padding that keeps the
// pieces' strides multiples of 8 elements, for the product's 16-byte loads.
#define NEED_F16  // 16-bit storage
#define NEED_I16  // bf16 bits move as uint16_t
#include "common.glsl"
#include "gemm_split_bf16_push.h"

const uint WG = GEMM_SPLIT_BF16_WG;
layout(local_size_x = WG) in;

void main() {
  uint t = linear_id();
  if (t >= pc.batch * pc.out_rows * pc.out_cols) return;
  uint c = t % pc.out_cols, r = t / pc.out_cols % pc.out_rows, b = t / (pc.out_cols * pc.out_rows);
  float x = 0.0;
  if (r < pc.rows && c < pc.cols) {
    int64_t at_src = int64_t(b) * pc.src_batch + int64_t(int(r) * pc.src_row + int(c) * pc.src_col);
    x = BufF32(pc.src + uint64_t(at_src) * 4ul).v[0];
  }
  uint hi = f32_to_bf16(x);
  float rest = x - bf16_to_f32(hi);
  bool infinite = isinf(bf16_to_f32(hi));
  uint lo = infinite || isnan(x) ? 0u : f32_to_bf16(rest);
  uint at = b * pc.dst_batch + r * pc.dst_row + c;
  for (uint p = 0u; p < pc.pieces; ++p) {
    uint v = (pc.lows >> p & 1u) != 0u ? lo : p > 0u && infinite ? 0u : hi;
    BufU16(pc.dst).v[at + p * pc.piece_stride] = uint16_t(v);
  }
}
