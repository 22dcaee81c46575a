#pragma once
// Cross entropy of class scores with class-index targets, fused: one read of the
// scores forward (log-sum-exp, target score and label-smoothing sum per row) and one
// read plus one write backward, with no log-probabilities stored in between.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/ops/loss.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct CrossEntropyArgs {
  DType dtype = DType::f32;  // of scores, weight, output and grads: f32, f16 or bf16
  uint64_t scores = 0;       // contiguous [n, c]
  uint64_t target = 0;       // contiguous int64 [n]
  uint64_t weight = 0;       // contiguous [c], or 0 for all ones
  uint64_t weight_sum = 0;   // fp32 scalar, the sum of weight: needed with a weight
                             // and label smoothing
  int64_t n = 0, c = 0;
  int64_t ignore_index = -100;
  float label_smoothing = 0.0f;
  Reduction reduction = Reduction::Mean;
  uint64_t lse = 0;           // fp32 [n]: written forward, read backward
  uint64_t total_weight = 0;  // fp32 scalar: the counted weight, written forward
                              // (mean and sum), read backward (mean)
};

// output: [n] for reduction None, else one element. rows: fp32 [n] scratch for the
// Mean and Sum reductions (0 for None). A target outside [0, c) that is not
// ignore_index gives NaN.
void cross_entropy_forward(Device& dev, const CrossEntropyArgs& a, uint64_t output, uint64_t rows);
// grad_input: contiguous [n, c], fully written. grad_output: [n] for None, else one
// element.
void cross_entropy_backward(Device& dev, const CrossEntropyArgs& a, uint64_t grad_output,
                            uint64_t grad_input);

}  // namespace vkml::ops
