#pragma once
// Choosing the matrix-unit (VK_KHR_cooperative_matrix) kernel for fp16 and
// bf16 GEMM.
//
// The kernel runs where the device offers an fp16 x fp16 -> fp32 (bf16 x bf16
// -> fp32, with VK_KHR_shader_bfloat16) subgroup shape, the build compiled
// shaders/gemm_coopmat.comp's f16 (bf16) variant, and the product is large
// enough. Before its first use on a device, a start-up check
// multiplies a small product with exact answers and compares; a driver that
// gets it wrong is told on stderr and keeps the scalar kernel.
//
// TORCH_VKML_COOPMAT (read once): unset or "1" as above; "0" never; "fp16"
// for fp16 only (bf16 products on the scalar kernel: a way around a driver
// whose bf16 matrix units misbehave beyond what the start-up check catches);
// "emulate" runs the kernel's emulated variants (plain arithmetic in place of
// the matrix units) on any device with fp16 (and int16, for bf16), so tests
// cover everything around the matrix units on lavapipe.
#include <cstdint>

#include "vkml/ops/matmul.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

enum class CoopmatMode { kOff, kAuto, kEmulated, kFp16Only };
CoopmatMode coopmat_mode();
void set_coopmat_mode(CoopmatMode mode);

// Benchmark knobs for sweeps on new hardware, read once from the environment:
// TORCH_VKML_COOPMAT_BK, the K depth of a step (16 or 32, two steps staged; default 0:
// 32 for fp16 with K >= 1024, else 16), TORCH_VKML_COOPMAT_TILE, the output tile
// (64 or 128; default 0: 128 x 128 for fp16 with K >= 1024 and 256+ such tiles, else
// 64 x 64; never beyond the device's shared memory), and TORCH_VKML_COOPMAT_WARPS, the
// subgroups per workgroup (4 or 8; default 0: 4; 8 where the device and fragment fit).
struct CoopmatTuning {
  int32_t bk = 0;
  int32_t tile = 0;
  int32_t warps = 0;
};
CoopmatTuning coopmat_tuning();
void set_coopmat_tuning(CoopmatTuning t);  // throws on values outside those above

struct CoopmatKernel {
  VkPipeline pipeline = VK_NULL_HANDLE;  // null: use the scalar kernel
  int64_t bm = 0, bn = 0;                // output tile
};

// The kernel for this fp16 or bf16 product on this device, or none.
CoopmatKernel coopmat_kernel(Device& dev, const GemmArgs& g);

// The matrix units as other kernels use them (attention_coopmat.cpp): the fragment shape
// and subgroup size for `dtype` (f16 or bf16) products on this device, once the GEMM's
// start-up check has passed with them (it runs here on first use); m = 0 where the
// matrix units are not used (off, unsupported, not built, rejected). `emulated`: the
// kernels' emulated variants stand in for them (TORCH_VKML_COOPMAT=emulate).
struct MatrixUnits {
  uint32_t m = 0, n = 0, k = 0, sg = 0;
  bool required = false;  // pipelines require subgroups of sg
  bool emulated = false;
};
MatrixUnits matrix_units(Device& dev, DType dtype);

// For products of `dtype` (f16 or bf16): "active", "emulated", "unchecked"
// (not used yet), "rejected" (failed the start-up check), "off"
// (TORCH_VKML_COOPMAT=0), "not built" or "unsupported".
const char* coopmat_status(Device& dev, DType dtype);

}  // namespace vkml::ops
