#pragma once
// Value checks run on the device: a failure is noted in the device error record
// (runtime/device_errors.h) with a code of shaders/device_error.h and raised at
// the host's next read of the device, so the check costs no wait of its own.
#include <cstdint>

#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// Every value of a contiguous int32/int64 tensor lies in [lo, hi]; a value below
// is noted as code_below, one above as code_above.
// `bound` and `aux` are noted with a failure for its message (a size, a dim).
void check_int_range(Device& dev, const TensorRef& t, int64_t lo, int64_t hi, uint32_t code_below,
                     uint32_t code_above, int64_t bound = 0, uint32_t aux = 0);

// Every value of a contiguous float32 tensor is finite and non-negative
// (positive: greater than zero), else `code` is noted.
void check_float_values(Device& dev, const TensorRef& t, bool positive, uint32_t code);

}  // namespace vkml::ops
