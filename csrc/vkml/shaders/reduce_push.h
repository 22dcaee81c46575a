// The push constants of shaders/reduce.comp, written once for its launcher
// (vkml/ops/reduce.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_REDUCE_PUSH_H
#define VKML_REDUCE_PUSH_H

// Ops (specialization constant 0): vkml::ops::ReduceOp's values.
#define REDUCE_SUM 0
#define REDUCE_PROD 1
#define REDUCE_MAX 2
#define REDUCE_MIN 3
#define REDUCE_ARGMAX 4
#define REDUCE_ARGMIN 5
#define REDUCE_ALL 6
#define REDUCE_ANY 7

// flags
#define REDUCE_IN_ACC 1u   // input is partials: accumulator values + int32 indices
#define REDUCE_OUT_ACC 2u  // write partials instead of final values
#define REDUCE_WANT_VAL 4u
#define REDUCE_WANT_IDX 8u
#define REDUCE_SCALE 16u

#include "push_block.h"

VKML_CONTRACT_BEGIN(reduce_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t in_ptr;
  uint64_t in_idx;  // int32 partial indices (REDUCE_IN_ACC)
  uint64_t out_ptr;
  uint64_t out_idx;  // int64 indices, or int32 partial indices (REDUCE_OUT_ACC)
  uint outer;
  uint r;
  uint inner;
  uint chunk;
  uint splits;
  uint flags;
  float scale;
VKML_PUSH_END(Push, 4 * 8 + 8 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(reduce_detail)

#endif
