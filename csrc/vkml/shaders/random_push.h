// The push constants of shaders/random.comp, written once for its launcher
// (vkml/ops/random.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_RANDOM_PUSH_H
#define VKML_RANDOM_PUSH_H

// Threads per workgroup (the kernel's local size).
#define RANDOM_WG 256

// Distributions (specialization constant 0): vkml::ops::Distribution's values.
#define RANDOM_UNIFORM 0
#define RANDOM_NORMAL 1
#define RANDOM_RANDINT 2
#define RANDOM_BERNOULLI 3

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::random_detail {
using uint = uint32_t;
struct Push {
#else
layout(push_constant, scalar) uniform Push {
#endif
  uint64_t dst;
  int64_t lo;      // randint: lower bound
  uint64_t range;  // randint: b - a (> 0)
  float a;         // uniform: from; normal: mean; bernoulli: p
  float b;         // uniform: to; normal: std
  uint seed_lo, seed_hi, offset_lo, offset_hi;
  uint numel;
#ifdef __cplusplus
};
static_assert(sizeof(Push) == 3 * 8 + 8 * 4);  // 4 bytes of tail padding
}  // namespace vkml::ops::random_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
