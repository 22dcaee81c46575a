// The push constants of shaders/nll_loss.comp, written once for its launcher
// (vkml/ops/loss.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_NLL_LOSS_PUSH_H
#define VKML_NLL_LOSS_PUSH_H

#include "loss_reduction.h"

// flags
#define NLL_LOSS_WEIGHT 1u

// Modes (specialization constant 0).
#define NLL_LOSS_FORWARD 0   // one workgroup: per-sample losses, the loss and total weight
#define NLL_LOSS_BACKWARD 1  // one thread per element of grad_input

#include "push_block.h"

VKML_CONTRACT_BEGIN(nll_loss_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t scores;
  uint64_t target;
  uint64_t weight;
  uint64_t loss_out;      // forward
  uint64_t total_weight;  // written by forward, read by backward (mean)
  uint64_t grad_output;   // backward
  uint64_t grad_input;    // backward
  int64_t ignore_index;
  uint64_t errors;  // the device error record: a target out of range is noted there
  uint n;
  uint c;
  int reduction;
  uint flags;
VKML_PUSH_END(Push, 9 * 8 + 4 * 4)
VKML_CONTRACT_END(nll_loss_detail)

#endif
