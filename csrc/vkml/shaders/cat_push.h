// The push constants and table entry of shaders/cat.comp, written once for its
// launcher (vkml/ops/shape.cpp, C++) and the kernel (GLSL), which reads the bytes as
// laid out here. The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_CAT_PUSH_H
#define VKML_CAT_PUSH_H

// Threads per workgroup (the kernel's local size).
#define CAT_WG 256

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::cat_detail {
using uint = uint32_t;
#endif

// One input, in the table at `table` (scalar layout).
struct CatEntry {
  uint64_t address;
  int start;
  int size;
  int stride[3];  // outer, dim, inner
  int pad;
};

#ifdef __cplusplus
static_assert(sizeof(CatEntry) == 8 + 6 * 4);
struct CatPush {
#else
layout(push_constant, scalar) uniform CatPush {
#endif
  uint64_t dst;
  uint64_t table;
  uint count;  // entries, sorted by start
  uint total;  // output size along the cat dim
  uint inner;
  uint numel;
#ifdef __cplusplus
};
static_assert(sizeof(CatPush) == 2 * 8 + 4 * 4);
}  // namespace vkml::ops::cat_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
