// The push constants of shaders/bilinear.comp, written once for its launcher
// (vkml/ops/upsample.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_BILINEAR_PUSH_H
#define VKML_BILINEAR_PUSH_H

// Threads per workgroup (the kernel's local size).
#define BILINEAR_WG 256

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::bilinear_detail {
using uint = uint32_t;
struct Push {
#else
layout(push_constant, scalar) uniform Push {
#endif
  uint64_t src;  // forward: input; bwd: grad_out (float32)
  uint64_t dst;  // forward: output; bwd: grad_in (float32, zeroed)
  uint ih, iw, oh, ow;
  float scale_h, scale_w;
  uint align_corners;
  uint numel;  // planes * oh * ow
#ifdef __cplusplus
};
static_assert(sizeof(Push) == 2 * 8 + 8 * 4);
}  // namespace vkml::ops::bilinear_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
