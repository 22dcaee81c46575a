// The push constants of shaders/conv.comp and conv_gemm.comp, written once for their
// launcher (vkml/ops/conv.cpp, C++) and the kernels (GLSL), which read the bytes as laid
// out here (conv.comp leaves splits and flags unread). ivec3 is int[3] in C++: the same
// 12 bytes in GLSL's scalar layout. The 64-bit fields come first, so C++ adds no padding
// between fields.
#ifndef VKML_CONV_PUSH_H
#define VKML_CONV_PUSH_H

// flags of conv_gemm.comp
#define CONV_PARTIAL 1u
#define CONV_SUM 2u

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::conv_detail {
using uint = uint32_t;
using ivec3 = int32_t[3];
struct Push {
#else
layout(push_constant, scalar) uniform Push {
#endif
  uint64_t p0, p1, p2, dst;
  uint n, groups, ci, co;
  ivec3 isz, osz, ksz, str, pad, dil;
  uint splits;  // conv_gemm.comp: K slices (CONV_PARTIAL, CONV_SUM)
  uint flags;
#ifdef __cplusplus
};
static_assert(sizeof(Push) == 4 * 8 + 24 * 4);
}  // namespace vkml::ops::conv_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
