// The push constants of shaders/tri.comp, written once for its launcher
// (vkml/ops/shape.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_TRI_PUSH_H
#define VKML_TRI_PUSH_H

// Threads per workgroup (the kernel's local size).
#define TRI_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(tri_detail)
VKML_PUSH_BEGIN(TriPush)
  uint64_t dst;
  uint64_t src;
  int dst_stride[3];  // batch, row, col
  int src_stride[3];
  uint rows;
  uint cols;
  uint numel;
  int k;                                // diagonal offset
  int upper;                            // 1: triu (keep c - r >= k), 0: tril (keep c - r <= k)
VKML_PUSH_END(TriPush, 2 * 8 + 12 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(tri_detail)

#endif
