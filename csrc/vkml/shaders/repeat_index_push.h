// The push constants of shaders/repeat_index.comp, written once for its launcher
// (vkml/ops/shape.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_REPEAT_INDEX_PUSH_H
#define VKML_REPEAT_INDEX_PUSH_H

// Modes (specialization constant 0): the passes, in the order they run.
#define REPEAT_INDEX_COUNTS 0      // cum[i] = repeats[i]
#define REPEAT_INDEX_PREFIX_SUM 1  // inclusive prefix sum of cum in place, one workgroup
#define REPEAT_INDEX_SEARCH 2      // per output j: the first i with cum[i] > j

#include "push_block.h"

VKML_CONTRACT_BEGIN(repeat_index_detail)
VKML_PUSH_BEGIN(RepeatPush)
  uint64_t repeats;
  uint64_t cum;  // uint [n]
  uint64_t dst;  // [total], int64 or int32
  uint n;
  uint total;
  uint i32;                               // repeats and dst are int32
VKML_PUSH_END(RepeatPush, 3 * 8 + 4 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(repeat_index_detail)

#endif
