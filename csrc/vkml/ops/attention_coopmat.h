#pragma once
// Choosing the matrix-unit attention kernels (shaders/attention_*_coopmat.comp) for
// fp16 and bf16: where the GEMM's matrix units are in use on the device
// (gemm_coopmat.h's matrix_units, TORCH_VKML_COOPMAT included) and a tiling fits its
// shared memory, the launchers in attention.cpp dispatch these instead of the scalar
// kernels, with the same push constants and grid shape.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/ops/attention.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct AttentionCoopmatKernel {
  VkPipeline pipeline = VK_NULL_HANDLE;  // null: use the scalar kernel
  uint64_t rows = 0;                     // owned rows a workgroup
};

// For `mode` (ATTENTION_FORWARD, ATTENTION_KEY_VALUE_GRADS or ATTENTION_QUERY_GRAD of
// shaders/attention_push.h).
AttentionCoopmatKernel attention_coopmat_kernel(Device& dev, DType dtype, uint32_t mode,
                                                const AttentionShape& s);

}  // namespace vkml::ops
