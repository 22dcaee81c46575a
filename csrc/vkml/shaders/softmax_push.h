// The push constants of shaders/softmax.comp, written once for its launcher
// (vkml/ops/softmax.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_SOFTMAX_PUSH_H
#define VKML_SOFTMAX_PUSH_H

// Modes (specialization constant 0); the backward modes come after the forward ones.
#define SOFTMAX_FORWARD 0
#define SOFTMAX_LOG_FORWARD 1
#define SOFTMAX_BACKWARD 2
#define SOFTMAX_LOG_BACKWARD 3

#include "push_block.h"

VKML_CONTRACT_BEGIN(softmax_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t x;    // forward: input; backward: grad_output
  uint64_t y;    // backward: the forward output
  uint64_t dst;  // forward: output; backward: grad_input
  uint outer;
  uint dim;
  uint inner;
VKML_PUSH_END(Push, 3 * 8 + 4 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(softmax_detail)

#endif
