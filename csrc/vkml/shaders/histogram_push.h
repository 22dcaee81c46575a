// The push constants of shaders/histogram.comp, written once for its launcher
// (vkml/ops/search.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_HISTOGRAM_PUSH_H
#define VKML_HISTOGRAM_PUSH_H

// Threads per workgroup (the kernel's local size).
#define HISTOGRAM_WG 256

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::histogram_detail {
using uint = uint32_t;
struct HistPush {
#else
layout(push_constant, scalar) uniform HistPush {
#endif
  uint64_t src;
  uint64_t weights;
  uint64_t bins;
  float lo;
  float hi;
  uint nbins;
  uint numel;
#ifdef __cplusplus
};
static_assert(sizeof(HistPush) == 3 * 8 + 4 * 4);
}  // namespace vkml::ops::histogram_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
