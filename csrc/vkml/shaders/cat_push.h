// The push constants and table entry of shaders/cat.comp, written once for its
// launcher (vkml/ops/shape.cpp, C++) and the kernel (GLSL), which reads the bytes as
// laid out here. The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_CAT_PUSH_H
#define VKML_CAT_PUSH_H

// Threads per workgroup (the kernel's local size).
#define CAT_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(cat_detail)

// One input, in the table at `table` (scalar layout).
struct CatEntry {
  uint64_t address;
  int start;
  int size;
  int stride[3];  // outer, dim, inner
  int pad;
};

VKML_ASSERT_SIZE(CatEntry, 8 + 6 * 4)
VKML_PUSH_BEGIN(CatPush)
  uint64_t dst;
  uint64_t table;
  uint count;  // entries, sorted by start
  uint total;  // output size along the cat dim
  uint inner;
  uint numel;
VKML_PUSH_END(CatPush, 2 * 8 + 4 * 4)
VKML_CONTRACT_END(cat_detail)

#endif
