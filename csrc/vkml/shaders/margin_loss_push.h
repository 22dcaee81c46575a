// The push constants of shaders/margin_loss.comp, written once for its launcher
// (vkml/ops/loss.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_MARGIN_LOSS_PUSH_H
#define VKML_MARGIN_LOSS_PUSH_H

// flags
#define MARGIN_LOSS_WEIGHT 1u

// Threads per workgroup (the kernel's local size).
#define MARGIN_LOSS_WG 64

#ifdef __cplusplus
#include <cstdint>
namespace vkml::ops::margin_loss_detail {
using uint = uint32_t;
struct MarginPush {
#else
layout(push_constant, scalar) uniform MarginPush {
#endif
  uint64_t x;          // [n, c] float32
  uint64_t target;     // int64: [n] (multi) or [n, c] (multilabel, -1 terminated)
  uint64_t weight;     // [c] float32 (multi only), flag MARGIN_LOSS_WEIGHT
  uint64_t loss;       // forward: [n] float32
  uint64_t grad_fac;   // backward: [n] float32
  uint64_t grad_in;    // backward: [n, c] float32
  uint64_t is_target;  // multilabel: [n, c] float32
  uint n, c;
  float margin;
  uint p;  // multi: 1 or 2
  uint flags;
#ifdef __cplusplus
};
static_assert(sizeof(MarginPush) == 7 * 8 + 6 * 4);  // 4 bytes of tail padding
}  // namespace vkml::ops::margin_loss_detail
#else
  // clang-format off: GLSL, which clang-format would split after the brace
} pc;
// clang-format on
#endif

#endif
