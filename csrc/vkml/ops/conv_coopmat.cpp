#include "vkml/ops/conv_coopmat.h"

#include <algorithm>

#include "vkml/ops/gemm_coopmat.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/runtime/shader_registry.h"
#include "vkml/shaders/conv_push.h"

namespace vkml::ops {

namespace {

// 64 x 64 output tiles, as the GEMM takes for every bf16 product and for fp16 with
// short K or few tiles (gemm_coopmat.cpp's H200 sweep); 128 x 128 would need a
// subgroup per 16 columns where subgroups are narrower than the tile (the B gather
// gives each thread one column), beyond lavapipe's shared memory for the emulation.
constexpr int64_t kTile = 64;
// Fewer output rows or columns per group than this leave most of a tile idle:
// conv_gemm.comp's 32 x 32 tiles do better.
constexpr int64_t kMinSide = 32;

struct Tiling {
  uint32_t warps = 0, threads = 0, bk = 0;
};

// What conv_coopmat.comp's index arithmetic assumes (its AQ, RB, FM, FN and lane
// ownership), and its shared arrays within the device's limit.
bool fits(const DeviceInfo& info, const MatrixUnits& u, const Tiling& t) {
  const uint32_t tile = uint32_t(kTile), wm = tile / 2, wn = tile / (t.warps / 2);
  if (t.warps % 2 || t.threads > info.max_workgroup_invocations) return false;
  if (wm % u.m || wn % u.n || t.bk % u.k || t.bk % 4) return false;
  if (t.threads % tile || (t.bk * tile / t.threads) % 4) return false;        // B: runs of quads
  if ((tile * t.bk / 4) % t.threads || t.threads % (t.bk / 4)) return false;  // A: whole quads
  if (u.emulated && (u.m * u.n) % u.sg) return false;
  const uint64_t staged = 2 * 2 * uint64_t(tile) * (t.bk + 8) * 2;  // A and B, two stages
  const uint64_t staging = uint64_t(t.warps) * u.m * (u.n + 4) * 4;
  return staged + staging <= info.max_shared_memory;
}

Shader shader_for(const MatrixUnits& u, bool bf16) {
  static constexpr Shader kShaders[2][2] = {
      {Shader::conv_coopmat_f16, Shader::conv_coopmat_emulated},
      {Shader::conv_coopmat_bf16, Shader::conv_coopmat_emulated_bf16}};
  return kShaders[bf16][u.emulated];
}

}  // namespace

ConvCoopmatKernel conv_coopmat_kernel(Device& dev, DType dtype, int mode, int64_t rows,
                                      int64_t cols) {
  if (dtype != DType::f16 && dtype != DType::bf16) return {};
  if (rows < kMinSide || cols < kMinSide) return {};
  const MatrixUnits u = matrix_units(dev, dtype);
  if (u.m == 0) return {};
  const bool bf16 = dtype == DType::bf16;
  const Shader shader = shader_for(u, bf16);
  if (!shader_blob(shader)) return {};
  // Enough subgroups that every thread owns one B column: 4 of 32 lanes (NVIDIA) or 64
  // (AMD), 8 of 8 (lavapipe). TORCH_VKML_COOPMAT_BK sets the K step as for the GEMM.
  Tiling t;
  t.warps = std::max<uint32_t>(4, uint32_t(kTile) / u.sg);
  t.threads = t.warps * u.sg;
  t.bk = coopmat_tuning().bk ? uint32_t(coopmat_tuning().bk) : 16;
  if (!fits(dev.info(), u, t)) return {};
  static const PipelineSlots slots(
      {2, 2, CONV_PHASED_DATA_GRAD + 1, 2});  // bf16, emulated, mode, bk
  VkPipeline pipeline = slots.get(
      dev, {uint32_t(bf16), uint32_t(u.emulated), uint32_t(mode), t.bk == 16 ? 0u : 1u}, [&] {
        return dev.pipelines().get(
            shader, {{mode, int32_t(t.threads), int32_t(kTile), int32_t(t.bk), int32_t(u.m),
                      int32_t(u.n), int32_t(u.k), int32_t(u.sg)},
                     u.required ? u.sg : 0u});
      });
  return {pipeline, kTile};
}

}  // namespace vkml::ops
