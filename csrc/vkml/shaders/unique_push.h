// The push constants of shaders/unique.comp, written once for its launcher
// (vkml/ops/sort.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_UNIQUE_PUSH_H
#define VKML_UNIQUE_PUSH_H

// Modes (specialization constant 0): the passes, in the order they run.
#define UNIQUE_GROUP_STARTS 0  // ids[i] = 1 where a group starts, else 0
#define UNIQUE_PREFIX_SUM 1    // inclusive prefix sum of ids in place, one workgroup
#define UNIQUE_WRITE 2         // unique keys, group starts and inverse
#define UNIQUE_COUNTS 3        // counts[g] from the group starts

#include "push_block.h"

VKML_CONTRACT_BEGIN(unique_detail)
VKML_PUSH_BEGIN(UniquePush)
  uint64_t keys;     // sorted [n]
  uint64_t perm;     // int64 [n]: source position of each sorted key
  uint64_t ids;      // uint [n]
  uint64_t uniq;     // [count] keys
  uint64_t start;    // int64 [count]
  uint64_t inverse;  // int64 [n] or 0
  uint64_t counts;   // int64 [count] or 0
  uint n;
  uint count;
VKML_PUSH_END(UniquePush, 7 * 8 + 2 * 4)
VKML_CONTRACT_END(unique_detail)

#endif
