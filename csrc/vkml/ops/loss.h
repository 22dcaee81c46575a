#pragma once
// Negative log-likelihood loss over class scores (log-probabilities).
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

enum class Reduction { None = 0, Mean = 1, Sum = 2 };

struct NllLossArgs {
  DType dtype = DType::f32;  // of input, weight, output: f32, f16 or bf16
  uint64_t input = 0;        // contiguous [n, c] (a 1-D input is n = 1)
  uint64_t target = 0;       // contiguous int64 [n]
  uint64_t weight = 0;       // contiguous [c], or 0 for all ones
  int64_t n = 0, c = 0;
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
  uint64_t output = 0;        // [n] for None, else a single element
  uint64_t total_weight = 0;  // a single element: sum of weights of counted targets
};

// out-of-range targets (not ignore_index) make the kernel write NaN into the
// output; the adapter checks targets before calling when it can.
void nll_loss_forward(Device& dev, const NllLossArgs& a);
// grad_input [n, c] contiguous is fully written (zeros except at targets).
// grad_output: [n] for None, else a single element.
void nll_loss_backward(Device& dev, const NllLossArgs& a, uint64_t grad_output,
                       uint64_t grad_input);

}  // namespace vkml::ops
