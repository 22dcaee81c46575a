// The push constants of shaders/copy.comp, written once for its launcher
// (vkml/ops/copy.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// The dtypes are codes of dtype_codes.h.
#ifndef VKML_COPY_PUSH_H
#define VKML_COPY_PUSH_H

// Threads per workgroup (the kernel's local size).
#define COPY_WG 256

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::copy_detail {
using uint = uint32_t;
struct Push {
#else
layout(push_constant, scalar) uniform Push {
#endif
  uint64_t dst;
  uint64_t src;
  int size[6];  // innermost first
  int dst_stride[6];
  int src_stride[6];
  uint numel;
  int ndim;
  int dst_dtype;
  int src_dtype;
#ifdef __cplusplus
};
static_assert(sizeof(Push) == 2 * 8 + 22 * 4);
}  // namespace vkml::ops::copy_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
