// The push constants of shaders/search.comp, written once for its launcher
// (vkml/ops/search.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_SEARCH_PUSH_H
#define VKML_SEARCH_PUSH_H

// Threads per workgroup (the kernel's local size).
#define SEARCH_WG 256

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::search_detail {
using uint = uint32_t;
struct SearchPush {
#else
layout(push_constant, scalar) uniform SearchPush {
#endif
  uint64_t boundaries;
  uint64_t values;
  uint64_t sorter;  // 0: none
  uint64_t dst;     // int64 or int32
  uint m;
  uint per_row;
  uint numel;
  uint right;
  uint out_i32;
#ifdef __cplusplus
};
static_assert(sizeof(SearchPush) == 4 * 8 + 6 * 4);  // 4 bytes of tail padding
}  // namespace vkml::ops::search_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
