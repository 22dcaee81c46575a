// The push constants of shaders/pool.comp, written once for its launcher
// (vkml/ops/pool.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// ivec3 is int[3] in C++: the same 12 bytes in GLSL's scalar layout. The 64-bit fields
// come first, so C++ adds no padding between fields.
#ifndef VKML_POOL_PUSH_H
#define VKML_POOL_PUSH_H

// Modes (specialization constant 0); the backward modes come after the forward ones.
#define POOL_MAX_FORWARD 0
#define POOL_AVG_FORWARD 1
#define POOL_MAX_BACKWARD 2
#define POOL_AVG_BACKWARD 3

#include "push_block.h"

VKML_CONTRACT_BEGIN(pool_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t x, y, idx;
  uint planes;
  ivec3 isz, osz, ksz, str, pad, dil;
  int count_include_pad;
  int divisor;      // 0: none
  int round_steps;  // avg: round the sum and each division to storage (CPU adaptive 3d)
VKML_PUSH_END(Push, 3 * 8 + 22 * 4)
VKML_CONTRACT_END(pool_detail)

#endif
