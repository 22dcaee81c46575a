// The push constants and flags of shaders/gemm.comp and gemm_coopmat.comp, written
// once for their launchers (vkml/ops/matmul.cpp, gemm_coopmat.cpp, C++) and the
// kernels (GLSL), which read the bytes as laid out here. The 64-bit fields come first,
// so C++ adds no padding between fields.
#ifndef VKML_GEMM_PUSH_H
#define VKML_GEMM_PUSH_H

// flags
#define GEMM_BIAS 1u        // beta != 0 and a bias is given
#define GEMM_A_MFAST 2u     // A is contiguous along m: load the tile m-fastest
#define GEMM_B_KFAST 4u     // B is contiguous along k: load the tile k-fastest
#define GEMM_SPLIT 8u       // partial sums of one K slice per workgroup
#define GEMM_SPLIT_SUM 16u  // gemm.comp: add the K slices' partial sums
// A's or B's fast side has stride 1 and its quads are aligned (float and matrix-unit
// kernels).
#define GEMM_A_VEC 32u
#define GEMM_B_VEC 64u
// Grouped products (torch._grouped_mm, gemm.comp): batch g covers the rows (m), columns
// (n) or depth (k) from offs[g - 1] (0 for g = 0) to offs[g], int32 offsets on the
// device at `bias` (grouped products have no bias), clamped to the extent.
#define GEMM_GROUP_M 128u
#define GEMM_GROUP_N 256u
#define GEMM_GROUP_K 512u
#define GEMM_GROUPS (GEMM_GROUP_M | GEMM_GROUP_N | GEMM_GROUP_K)

#include "push_block.h"

VKML_CONTRACT_BEGIN(gemm_detail)
VKML_PUSH_BEGIN(Push)
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
  uint splits;  // K slices (GEMM_SPLIT, GEMM_SPLIT_SUM)
VKML_PUSH_END(Push, 8 * 8 + 16 * 4)
VKML_CONTRACT_END(gemm_detail)

#endif
