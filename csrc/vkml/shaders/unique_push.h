// The push constants of shaders/unique.comp, written once for its launcher
// (vkml/ops/sort.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_UNIQUE_PUSH_H
#define VKML_UNIQUE_PUSH_H

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::unique_detail {
using uint = uint32_t;
struct UniquePush {
#else
layout(push_constant, scalar) uniform UniquePush {
#endif
  uint64_t keys;     // sorted [n]
  uint64_t perm;     // int64 [n]: source position of each sorted key
  uint64_t ids;      // uint [n]
  uint64_t uniq;     // [count] keys
  uint64_t start;    // int64 [count]
  uint64_t inverse;  // int64 [n] or 0
  uint64_t counts;   // int64 [count] or 0
  uint n;
  uint count;
#ifdef __cplusplus
};
static_assert(sizeof(UniquePush) == 7 * 8 + 2 * 4);
}  // namespace vkml::ops::unique_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
