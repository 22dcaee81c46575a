// The push constants of shaders/gemm_split_bf16.comp, written once for its launcher
// (vkml/ops/gemm_bf16x3.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out
// here. The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_GEMM_SPLIT_BF16_PUSH_H
#define VKML_GEMM_SPLIT_BF16_PUSH_H

#define GEMM_SPLIT_BF16_WG 256  // threads per workgroup

#include "push_block.h"

VKML_CONTRACT_BEGIN(gemm_split_bf16_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t src;                  // float32, read through the strides below
  uint64_t dst;                  // bfloat16 bits
  int64_t src_batch;             // element strides of src
  uint rows, cols, batch;        // src's sizes
  uint out_rows, out_cols;       // dst's per piece: zeros past src's
  int src_row, src_col;
  uint dst_batch, dst_row;       // dst element strides (its columns are contiguous)
  uint piece_stride;             // elements between an element's pieces in dst
  uint pieces;                   // 1 to 3
  uint lows;                     // bit p set: piece p is the low part, else the high part
VKML_PUSH_END(Push, 3 * 8 + 12 * 4)
VKML_CONTRACT_END(gemm_split_bf16_detail)

#endif
