// The push constants of shaders/norm.comp, written once for its launcher
// (vkml/ops/norm.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// `part` follows the 32-bit fields at offset 112, 8-aligned in both languages.
#ifndef VKML_NORM_PUSH_H
#define VKML_NORM_PUSH_H

// Row elements a thread of modes 4 and 5 keeps in registers.
#define NORM_ROW_REGISTERS 16

#include "push_block.h"

VKML_CONTRACT_BEGIN(norm_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t x, gy, w, b, mean, rstd, dst, sa, sb;
  uint outer, c, inner;
  uint sdiv, smod, adiv, amod;
  float eps;    // mode 0
  float count;  // mode 3: elements per statistic
  uint parts;
  uint64_t part;  // modes 6-10: scratch, [2][c][parts] floats
VKML_PUSH_END(Push, 10 * 8 + 10 * 4)
VKML_ASSERT_OFFSET(Push, part, 9 * 8 + 10 * 4)
VKML_CONTRACT_END(norm_detail)

#endif
