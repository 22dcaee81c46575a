#pragma once
// float32 products on bf16 matrix units, where torch.set_float32_matmul_precision allows
// it (GemmArgs::precision) and the device has them (gemm_coopmat.h's matrix_units): as
// CUDA runs "high" on TF32 tensor cores. "high" splits each operand element x into
// hi = bf16(x) and lo = bf16(x - hi) and sums hi hi + hi lo + lo hi (bf16x3: about 16
// significant bits, finer than TF32's 11); "medium" multiplies hi hi alone. Both
// accumulate in fp32 and write C, alpha, beta and the bias in fp32.
#include "vkml/ops/matmul.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// Runs `g` (float32, precision high or medium) that way and returns true, or returns
// false (nothing done) where the matrix units cannot take it.
bool gemm_on_bf16_units(Device& dev, const GemmArgs& g);

}  // namespace vkml::ops
