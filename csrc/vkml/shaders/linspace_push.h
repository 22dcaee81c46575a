// The push constants of shaders/linspace.comp, written once for its launcher
// (vkml/ops/creation.cpp, C++) and the kernel (GLSL), which reads the bytes as laid
// out here. FT is the variant's precision (float or double): the f32 variant needs no
// float64. The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_LINSPACE_PUSH_H
#define VKML_LINSPACE_PUSH_H

// Threads per workgroup (the kernel's local size).
#define LINSPACE_WG 256

#include "push_block.h"

// clang-format off: a template, which clang-format's macro blocks do not follow
VKML_CONTRACT_BEGIN(linspace_detail)
#ifdef __cplusplus
template <class FT>
#endif
VKML_PUSH_BEGIN(Push)
  uint64_t dst;
  FT start;
  FT end;
  FT step;
  uint n;
  uint halfway;
VKML_PUSH_END(Push<float>, 8 + 6 * 4)
VKML_ASSERT_SIZE(Push<double>, 4 * 8 + 2 * 4)
VKML_CONTRACT_END(linspace_detail)
// clang-format on

#endif
