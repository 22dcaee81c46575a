// The push constants of shaders/search.comp, written once for its launcher
// (vkml/ops/search.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_SEARCH_PUSH_H
#define VKML_SEARCH_PUSH_H

// Threads per workgroup (the kernel's local size).
#define SEARCH_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(search_detail)
VKML_PUSH_BEGIN(SearchPush)
  uint64_t boundaries;
  uint64_t values;
  uint64_t sorter;  // 0: none
  uint64_t dst;     // int64 or int32
  uint m;
  uint per_row;
  uint numel;
  uint right;
  uint out_i32;
VKML_PUSH_END(SearchPush, 4 * 8 + 6 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(search_detail)

#endif
