// The push constants of shaders/copy.comp, written once for its launcher
// (vkml/ops/copy.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// The dtypes are codes of dtype_codes.h.
#ifndef VKML_COPY_PUSH_H
#define VKML_COPY_PUSH_H

// Threads per workgroup (the kernel's local size).
#define COPY_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(copy_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t dst;
  uint64_t src;
  int size[6];  // innermost first
  int dst_stride[6];
  int src_stride[6];
  uint numel;
  int ndim;
  int dst_dtype;
  int src_dtype;
VKML_PUSH_END(Push, 2 * 8 + 22 * 4)
VKML_CONTRACT_END(copy_detail)

#endif
