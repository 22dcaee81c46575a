// The push constants of shaders/random.comp, written once for its launcher
// (vkml/ops/random.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_RANDOM_PUSH_H
#define VKML_RANDOM_PUSH_H

// Threads per workgroup (the kernel's local size).
#define RANDOM_WG 256

// Distributions (specialization constant 0): vkml::ops::Distribution's values.
#define RANDOM_UNIFORM 0
#define RANDOM_NORMAL 1
#define RANDOM_RANDINT 2
#define RANDOM_BERNOULLI 3

#include "push_block.h"

VKML_CONTRACT_BEGIN(random_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t dst;
  int64_t lo;      // randint: lower bound
  uint64_t range;  // randint: b - a (> 0)
  uint64_t a64;    // the float64 variant's a and b: float64 bits (the f32 variant's
  uint64_t b64;    // push block must not name a double)
  float a;         // uniform: from; normal: mean; bernoulli: p
  float b;         // uniform: to; normal: std
  uint seed_lo, seed_hi, offset_lo, offset_hi;
  uint numel;
VKML_PUSH_END(Push, 5 * 8 + 8 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(random_detail)

#endif
