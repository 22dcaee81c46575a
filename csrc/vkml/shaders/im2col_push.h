// The push constants of shaders/im2col.comp, written once for its launcher
// (vkml/ops/im2col.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_IM2COL_PUSH_H
#define VKML_IM2COL_PUSH_H

// Threads per workgroup (the kernel's local size).
#define IM2COL_WG 256

// Modes (specialization constant 0).
#define IM2COL_IM2COL 0
#define IM2COL_COL2IM 1

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::im2col_detail {
using uint = uint32_t;
struct Push {
#else
layout(push_constant, scalar) uniform Push {
#endif
  uint64_t src;
  uint64_t dst;
  int H, W, kh, kw;
  int ph, pw, sh, sw, dh, dw;
  int oh, ow;  // column grid
  uint numel;  // of dst
#ifdef __cplusplus
};
static_assert(sizeof(Push) == 2 * 8 + 14 * 4);  // 4 bytes of tail padding
}  // namespace vkml::ops::im2col_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
