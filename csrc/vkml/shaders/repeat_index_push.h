// The push constants of shaders/repeat_index.comp, written once for its launcher
// (vkml/ops/shape.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_REPEAT_INDEX_PUSH_H
#define VKML_REPEAT_INDEX_PUSH_H

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::repeat_index_detail {
using uint = uint32_t;
struct RepeatPush {
#else
layout(push_constant, scalar) uniform RepeatPush {
#endif
  uint64_t repeats;
  uint64_t cum;  // uint [n]
  uint64_t dst;  // [total], int64 or int32
  uint n;
  uint total;
  uint i32;  // repeats and dst are int32
#ifdef __cplusplus
};
static_assert(sizeof(RepeatPush) == 3 * 8 + 4 * 4);  // 4 bytes of tail padding
}  // namespace vkml::ops::repeat_index_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
