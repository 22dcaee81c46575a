#pragma once
// Softmax and log-softmax over the middle dim of a contiguous [outer, dim, inner]
// tensor, and their backward passes.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct SoftmaxShape {
  int64_t outer = 1, dim = 1, inner = 1;
};

// dtype f32 or f16 (fp32 math).
void softmax(Device& dev, DType dtype, uint64_t in, uint64_t out, SoftmaxShape s, bool log);
// grad_in = y * (g - sum(g * y))             (softmax, y = output)
// grad_in = g - exp(y) * sum(g)              (log_softmax, y = output)
void softmax_backward(Device& dev, DType dtype, uint64_t grad_out, uint64_t out, uint64_t grad_in,
                      SoftmaxShape s, bool log);

}  // namespace vkml::ops
