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
// false (nothing done) where the matrix units cannot take it or the way is off.
bool gemm_on_bf16_units(Device& dev, const GemmArgs& g);

// Whether "high" and "medium" take the bf16 units at all. Off unless
// TORCH_VKML_FP32_ON_BF16=1 (or set here): on the only GPUs measured it is slower than the
// float32 kernel, whose exact result "high" also allows (H100, 2026-12-05: bf16x3 at 10.8
// TFLOP/s against 23.9; H200, 2026-12-04: one bf16 product at 19.5 against 24.1).
bool fp32_on_bf16_units();
void set_fp32_on_bf16_units(bool on);

}  // namespace vkml::ops
