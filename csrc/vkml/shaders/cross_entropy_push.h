// The push constants of shaders/cross_entropy.comp, written once for its launcher
// (vkml/ops/cross_entropy.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_CROSS_ENTROPY_PUSH_H
#define VKML_CROSS_ENTROPY_PUSH_H

#include "loss_reduction.h"

// Specialization constant 0.
#define CROSS_ENTROPY_ROWS 0
#define CROSS_ENTROPY_REDUCE 1
#define CROSS_ENTROPY_BACKWARD 2

// flags
#define CROSS_ENTROPY_WEIGHT 1u
#define CROSS_ENTROPY_WEIGHT_SUM 2u  // label smoothing with a weight: W is at weight_sum

#include "push_block.h"

VKML_CONTRACT_BEGIN(cross_entropy_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t scores;
  uint64_t target;
  uint64_t weight;
  uint64_t weight_sum;  // fp32 scalar
  uint64_t lse;         // fp32 [n]
  uint64_t rows;        // fp32 [n] row losses (reduction mean or sum)
  uint64_t dst;         // forward: [n] or one element; backward: grad_output, likewise
  uint64_t total;       // fp32 scalar: the counted weight (written by 1, read by 2)
  uint64_t grad_input;
  uint64_t errors;  // the device error record: a target out of range is noted there
  int64_t ignore_index;
  uint n;
  uint c;
  int reduction;
  uint flags;
  float smoothing;
VKML_PUSH_END(Push, 11 * 8 + 6 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(cross_entropy_detail)

#endif
