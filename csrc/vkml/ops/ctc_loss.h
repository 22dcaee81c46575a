#pragma once
// Connectionist temporal classification loss: the alpha recursion (forward) and the
// beta recursion with the gradient (backward), one workgroup per batch element (see
// shaders/ctc_loss.comp). The caller validates lengths and targets shapes; labels
// outside [0, C) give NaN, not a fault.
#include <cstddef>
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct CtcLossArgs {
  DType dtype = DType::f32;  // of log_probs, log_alpha, nll, grads: f32, or f64 (shaderFloat64)
  uint64_t log_probs = 0;    // [t, n, c] with these strides in elements
  int64_t lp_strides[3] = {0, 0, 0};
  uint64_t targets = 0;  // contiguous int64
  int64_t targets_numel = 0;
  uint64_t lengths = 0;  // contiguous int64 [n, 3]: input length (<= t), target length
                         // (<= max_target_length), offset of the sample's first label
  int64_t t = 0, n = 0, c = 0;
  int64_t max_target_length = 0;
  int64_t blank = 0;
  uint64_t log_alpha = 0;  // contiguous [n, t, 2 * max_target_length + 1]
  uint64_t nll = 0;        // contiguous [n]: the negative log likelihoods
};

// Writes log_alpha (-inf where a sample's steps or positions end) and nll.
void ctc_loss_forward(Device& dev, const CtcLossArgs& a);

// The scratch ctc_loss_backward needs, in bytes.
size_t ctc_loss_backward_scratch_bytes(const CtcLossArgs& a);

// Reads log_alpha and nll as forward wrote them and grad_out [n] (elements
// grad_out_stride apart); writes every element of grad, contiguous [t, n, c].
void ctc_loss_backward(Device& dev, const CtcLossArgs& a, uint64_t grad_out,
                       int64_t grad_out_stride, bool zero_infinity, uint64_t scratch,
                       uint64_t grad);

}  // namespace vkml::ops
