// The push constants of shaders/compact.comp, written once for its launcher
// (vkml/ops/compact.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_COMPACT_PUSH_H
#define VKML_COMPACT_PUSH_H

// Threads per workgroup (the kernel's local size).
#define COMPACT_WG 256

// Modes (specialization constant 0): vkml::ops::CompactMode's values.
#define COMPACT_COORDINATES 0
#define COMPACT_SELECT 1
#define COMPACT_SCATTER 2

#include "push_block.h"

VKML_CONTRACT_BEGIN(compact_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t prefix;
  uint64_t src;
  uint64_t dst;
  uint n;
  int ndim;
  uint limit;    // mode 0: rows of dst, whose coordinates go column by column (dst is
                 // (ndim, rows), as the CPU's nonzero lays out its result); mode 2:
                 // elements available in src, later selections are skipped
  int size[12];  // mode 0: the input's sizes, outermost first
VKML_PUSH_END(Push, 3 * 8 + 16 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(compact_detail)

#endif
