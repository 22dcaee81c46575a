// The push constants of shaders/sort.comp, written once for its launcher
// (vkml/ops/sort.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_SORT_PUSH_H
#define VKML_SORT_PUSH_H

// Modes (specialization constant 0): the passes of the bitonic sort.
#define SORT_BLOCKS 0       // sort each block in shared memory, reading the input
#define SORT_GLOBAL_STEP 1  // one compare-exchange step (k, j) with j >= block size
#define SORT_BLOCK_MERGE 2  // finish stage k inside each block (steps j < block size)

#include "push_block.h"

VKML_CONTRACT_BEGIN(sort_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t in_keys;   // [rows, n]
  uint64_t keys;      // working [rows, P]
  uint64_t idx;       // working [rows, P], uint
  uint64_t out_keys;  // [rows, n]
  uint64_t out_idx;   // [rows, n], int64
  uint n;
  uint P;
  uint pairs;  // rows * P / 2
  uint k;
  uint j;
  uint desc;
  uint last;
VKML_PUSH_END(Push, 5 * 8 + 8 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(sort_detail)

#endif
