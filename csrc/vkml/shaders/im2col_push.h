// The push constants of shaders/im2col.comp, written once for its launcher
// (vkml/ops/im2col.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_IM2COL_PUSH_H
#define VKML_IM2COL_PUSH_H

// Threads per workgroup (the kernel's local size).
#define IM2COL_WG 256

// Modes (specialization constant 0).
#define IM2COL_IM2COL 0
#define IM2COL_COL2IM 1

#include "push_block.h"

VKML_CONTRACT_BEGIN(im2col_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t src;
  uint64_t dst;
  int H, W, kh, kw;
  int ph, pw, sh, sw, dh, dw;
  int oh, ow;                        // column grid
  uint numel;                        // of dst
VKML_PUSH_END(Push, 2 * 8 + 14 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(im2col_detail)

#endif
