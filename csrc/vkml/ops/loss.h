#pragma once
// Negative log-likelihood loss over class scores (log-probabilities).
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/loss_reduction.h"

namespace vkml::ops {

enum class Reduction {
  None = LOSS_REDUCTION_NONE,
  Mean = LOSS_REDUCTION_MEAN,
  Sum = LOSS_REDUCTION_SUM
};

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

namespace vkml::ops {

// Margin losses over float32 scores, one thread per sample (see margin_loss.comp).
enum class MarginLoss { Multi = 0, MultiLabel = 2 };

struct MarginLossArgs {
  MarginLoss kind = MarginLoss::Multi;
  uint64_t x = 0;          // contiguous float32 [n, c]
  uint64_t target = 0;     // contiguous int64 [n] (Multi) or [n, c] (MultiLabel)
  uint64_t weight = 0;     // Multi: contiguous float32 [c], or 0
  uint64_t is_target = 0;  // MultiLabel: float32 [n, c], written by forward, read by backward
  int64_t n = 0, c = 0;
  int p = 1;  // Multi: 1 or 2
  float margin = 1;
};

// Targets must be in range (the adapter checks): loss [n] float32 per sample.
void margin_loss_forward(Device& dev, const MarginLossArgs& a, uint64_t loss);
// grad_fac [n] float32 per sample (grad_output, already divided by n for a mean);
// writes every element of grad_in [n, c] float32.
void margin_loss_backward(Device& dev, const MarginLossArgs& a, uint64_t grad_fac,
                          uint64_t grad_in);

}  // namespace vkml::ops
