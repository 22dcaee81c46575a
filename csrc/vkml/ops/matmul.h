#pragma once
// Batched GEMM with arbitrary element strides, so transposed operands need no copy:
//   C[b,i,j] = alpha * sum_k A[b,i,k] * B[b,k,j] + beta * Bias[b,i,j]
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// What torch.set_float32_matmul_precision allows a float32 product (ops/gemm_bf16x3.h);
// other dtypes ignore it.
enum class Fp32Precision {
  kHighest,  // fp32 arithmetic throughout
  kHigh,     // may run as bf16x3 on matrix units: about 16 significant bits a product
  kMedium,   // may run as one bf16 product on matrix units, fp32 accumulation
};

// Grouped products (torch._grouped_mm): batch g covers one range of m, n or k.
enum class GemmGroups { none, m, n, k };

struct GemmArgs {
  // f32, f16 or bf16 (fp32 accumulation, rounded once), f64, or i64 / i32 / i16 / i8 / u8
  // (int64 accumulation, wrapping in the element type); all operands
  DType dtype = DType::f32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  uint64_t a = 0;
  int64_t a_batch = 0, a_row = 0, a_col = 0;  // element strides
  uint64_t b = 0;
  int64_t b_batch = 0, b_row = 0, b_col = 0;
  uint64_t c = 0;
  int64_t c_batch = 0, c_row = 0, c_col = 0;
  uint64_t bias = 0;  // optional; zero strides broadcast it
  int64_t bias_batch = 0, bias_row = 0, bias_col = 0;
  float alpha = 1.0f;
  float beta = 0.0f;  // 0: bias ignored entirely (NaNs in it do not propagate)
  // alpha and beta of the integer dtypes (int32 range)
  int64_t int_alpha = 1;
  int64_t int_beta = 0;
  Fp32Precision precision = Fp32Precision::kHighest;
  // bf16 operands with a float32 c and bias (gemm_bf16x3.cpp's products): fp32
  // accumulation, written unrounded; needs the matrix-unit kernel.
  bool f32_result = false;
  // i8 operands with an int32 c and bias (torch._int_mm): the sums are not wrapped to int8.
  bool i32_result = false;
  // Grouped: batch g's range of the grouped side runs from group_offsets[g - 1] (0 for
  // g = 0) to group_offsets[g], int32 values on the device read by the kernel (no host
  // wait), clamped to [0, m / n / k]. m, n and k are the whole extents; the operands
  // without a group index have batch stride 0. C outside every range is not written.
  // No bias, no split-K; fp16 and bf16 on the matrix units where the device has them.
  GemmGroups groups = GemmGroups::none;
  uint64_t group_offsets = 0;
};

void gemm(Device& dev, const GemmArgs& args);

// Forces the scalar kernel's output tile, 32, 64 or 128 (square), where the
// device allows it; 0 (the default) chooses per device and shape. For tests
// and benchmarks; TORCH_VKML_GEMM_TILE sets it at start-up.
void set_gemm_tile(int tile);
int gemm_tile();

// Sets a whole tile of shaders/gemm.comp for fp32 products (BM, BN, BK, threads, TN),
// overriding the choice above; all zeros clears it. For sweeps on new hardware
// (scripts/gpu_gemm_sweep.py); throws on a tile the shader cannot run.
// TORCH_VKML_GEMM_CONFIG=bm,bn,bk,threads,tn sets it at start-up.
void set_gemm_config(int32_t bm, int32_t bn, int32_t bk, int32_t threads, int32_t tn);

}  // namespace vkml::ops
