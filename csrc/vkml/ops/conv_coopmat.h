#pragma once
// Choosing the matrix-unit convolution kernel (shaders/conv_coopmat.comp) for fp16 and
// bf16 implicit GEMMs: where the GEMM's matrix units are in use on the device
// (gemm_coopmat.h's matrix_units, TORCH_VKML_COOPMAT included), the product is large
// enough for its tiles and a tiling fits the device, conv.cpp dispatches it in place
// of conv_gemm.comp, with the same push constants, grid and split-K.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct ConvCoopmatKernel {
  VkPipeline pipeline = VK_NULL_HANDLE;  // null: use conv_gemm.comp
  int64_t tile = 0;                      // the square output tile's side
};

// For the implicit GEMM of `mode` (CONV_FORWARD, CONV_DATA_GRAD, CONV_WEIGHT_GRAD or
// CONV_PHASED_DATA_GRAD of shaders/conv_push.h) with `rows` x `cols` outputs per group
// (per phase).
ConvCoopmatKernel conv_coopmat_kernel(Device& dev, DType dtype, int mode, int64_t rows,
                                      int64_t cols);

}  // namespace vkml::ops
