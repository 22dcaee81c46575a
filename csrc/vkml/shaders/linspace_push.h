// The push constants of shaders/linspace.comp, written once for its launcher
// (vkml/ops/creation.cpp, C++) and the kernel (GLSL), which reads the bytes as laid
// out here. FT is the variant's precision (float or double): the f32 variant needs no
// float64. The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_LINSPACE_PUSH_H
#define VKML_LINSPACE_PUSH_H

// Threads per workgroup (the kernel's local size).
#define LINSPACE_WG 256

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::linspace_detail {
using uint = uint32_t;
template <class FT>
struct Push {
#else
layout(push_constant, scalar) uniform Push {
#endif
  uint64_t dst;
  FT start;
  FT end;
  FT step;
  uint n;
  uint halfway;
#ifdef __cplusplus
};
static_assert(sizeof(Push<float>) == 8 + 6 * 4);
static_assert(sizeof(Push<double>) == 4 * 8 + 2 * 4);
}  // namespace vkml::ops::linspace_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
