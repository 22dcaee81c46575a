// The push constants of shaders/tri.comp, written once for its launcher
// (vkml/ops/shape.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_TRI_PUSH_H
#define VKML_TRI_PUSH_H

// Threads per workgroup (the kernel's local size).
#define TRI_WG 256

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::tri_detail {
using uint = uint32_t;
struct TriPush {
#else
layout(push_constant, scalar) uniform TriPush {
#endif
  uint64_t dst;
  uint64_t src;
  int dst_stride[3];  // batch, row, col
  int src_stride[3];
  uint rows;
  uint cols;
  uint numel;
  int k;      // diagonal offset
  int upper;  // 1: triu (keep c - r >= k), 0: tril (keep c - r <= k)
#ifdef __cplusplus
};
static_assert(sizeof(TriPush) == 2 * 8 + 12 * 4);  // 4 bytes of tail padding
}  // namespace vkml::ops::tri_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
