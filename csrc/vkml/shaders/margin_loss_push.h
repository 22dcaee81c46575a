// The push constants of shaders/margin_loss.comp, written once for its launcher
// (vkml/ops/loss.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_MARGIN_LOSS_PUSH_H
#define VKML_MARGIN_LOSS_PUSH_H

// flags
#define MARGIN_LOSS_WEIGHT 1u

// Threads per workgroup (the kernel's local size).
#define MARGIN_LOSS_WG 64

// Modes (specialization constant 0): each loss's backward follows its forward.
#define MARGIN_LOSS_MULTI_FORWARD 0
#define MARGIN_LOSS_MULTI_BACKWARD 1
#define MARGIN_LOSS_MULTILABEL_FORWARD 2  // also writes is_target
#define MARGIN_LOSS_MULTILABEL_BACKWARD 3

#include "push_block.h"

VKML_CONTRACT_BEGIN(margin_loss_detail)
VKML_PUSH_BEGIN(MarginPush)
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
VKML_PUSH_END(MarginPush, 7 * 8 + 6 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(margin_loss_detail)

#endif
