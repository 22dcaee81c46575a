// The push constants of shaders/complex.comp, written once for its launcher
// (vkml/ops/complex.cpp, C++) and the kernel (GLSL).
#ifndef VKML_COMPLEX_PUSH_H
#define VKML_COMPLEX_PUSH_H

#include "push_block.h"

// flags: the second operand is the scalar (w_re, w_im), not a tensor.
#define COMPLEX_W_SCALAR 1u

VKML_CONTRACT_BEGIN(complex_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t dst;  // complex64, contiguous
  uint64_t z;    // complex64, contiguous, numel elements
  uint64_t w;    // the second operand (pow), contiguous like z, unless COMPLEX_W_SCALAR
  uint numel;
  uint flags;
  float w_re;
  float w_im;
VKML_PUSH_END(Push, 3 * 8 + 4 * 4)
VKML_CONTRACT_END(complex_detail)

#endif
