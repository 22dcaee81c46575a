#include "vkml/ops/attention_coopmat.h"

#include <algorithm>
#include <iterator>

#include "vkml/ops/gemm_coopmat.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/runtime/shader_registry.h"
#include "vkml/shaders/attention_push.h"

namespace vkml::ops {

namespace {

// A tiling: `warps` subgroups, each owning MM rows, walking `cols` rows of the other
// operands at a time. Largest first; the first whose shared arrays fit is taken.
struct Tiling {
  uint32_t warps, cols;
};
constexpr Tiling kTilings[] = {{4, 32}, {4, 16}, {2, 32}, {2, 16}, {1, 16}};

// The kernels' shared arrays (attention_coopmat.glsl's pitches) in bytes.
uint64_t shared_bytes(uint32_t mode, const Tiling& t, const MatrixUnits& u, uint64_t ep) {
  const uint64_t rows = uint64_t(t.warps) * u.m, op = ep + 8, tp = t.cols + 8;
  const uint64_t sp = std::max<uint64_t>(t.cols, u.n) + 4;
  const uint64_t lanes_per_row = u.sg >= u.m ? u.sg / u.m : 1;
  if (mode == ATTENTION_FORWARD) {
    const uint64_t output = u.emulated ? rows * ep * 4 : 0;  // the emulation's Os
    return rows * op * 2 + 2 * uint64_t(t.cols) * op * 2 + rows * sp * 4 + rows * tp * 2 +
           rows * lanes_per_row * 4 + rows * 4 + output;
  }
  return 2 * rows * op * 2 + 2 * uint64_t(t.cols) * op * 2 + rows * sp * 4 + 2 * rows * tp * 2;
}

// What the kernels' lane arithmetic assumes of the fragment shape and subgroup size.
bool lanes_fit(const Tiling& t, const MatrixUnits& u, uint64_t ep) {
  const uint32_t m = u.m, n = u.n, k = u.k, sg = u.sg;
  if (ep % n || ep % k || t.cols % n || t.cols % k) return false;
  if ((sg >= m ? sg % m : m % sg) != 0) return false;
  const uint32_t lanes_per_row = sg >= m ? sg / m : 1;
  return (m * n) % sg == 0 && (m * t.cols) % sg == 0 && t.cols % lanes_per_row == 0;
}

Shader shader_for(uint32_t mode, const MatrixUnits& u, bool bf16) {
  static constexpr Shader kForward[2][2] = {
      {Shader::attention_forward_coopmat_f16, Shader::attention_forward_coopmat_emulated},
      {Shader::attention_forward_coopmat_bf16, Shader::attention_forward_coopmat_emulated_bf16}};
  static constexpr Shader kBackward[2][2] = {
      {Shader::attention_backward_coopmat_f16, Shader::attention_backward_coopmat_emulated},
      {Shader::attention_backward_coopmat_bf16, Shader::attention_backward_coopmat_emulated_bf16}};
  return (mode == ATTENTION_FORWARD ? kForward : kBackward)[bf16][u.emulated];
}

}  // namespace

AttentionCoopmatKernel attention_coopmat_kernel(Device& dev, DType dtype, uint32_t mode,
                                                const AttentionShape& s) {
  if (dtype != DType::f16 && dtype != DType::bf16) return {};
  const int64_t e = std::max(s.E, s.Ev);
  if (e <= 0 || e > kAttentionMaxHeadDim) return {};
  const MatrixUnits u = matrix_units(dev, dtype);
  if (u.m == 0) return {};
  const bool bf16 = dtype == DType::bf16;
  const Shader shader = shader_for(mode, u, bf16);
  if (!shader_blob(shader)) return {};
  const DeviceInfo& info = dev.info();
  const uint64_t ep = uint64_t(e + 31) / 32 * 32;
  const int64_t owned = mode == ATTENTION_KEY_VALUE_GRADS ? s.S : s.L;
  const uint64_t max_x = std::min<uint64_t>(info.max_workgroup_count[0], 65535);
  for (uint32_t i = 0; i < std::size(kTilings); ++i) {
    const Tiling& t = kTilings[i];
    const uint64_t threads = uint64_t(t.warps) * u.sg, rows = uint64_t(t.warps) * u.m;
    if (threads > info.max_workgroup_invocations || !lanes_fit(t, u, ep) ||
        shared_bytes(mode, t, u, ep) > info.max_shared_memory ||
        uint64_t(ceil_div(owned, int64_t(rows))) > max_x)
      continue;
    static const PipelineSlots slots({4, ATTENTION_QUERY_GRAD + 1, kAttentionMaxHeadDim / 32 + 1,
                                      uint32_t(std::size(kTilings))});
    VkPipeline pipeline = slots.get(
        dev, {uint32_t(bf16) * 2 + uint32_t(u.emulated), mode, uint32_t(ep / 32), i}, [&] {
          return dev.pipelines().get(
              shader, {{int32_t(ep), int32_t(t.cols), int32_t(threads), int32_t(u.m), int32_t(u.n),
                        int32_t(u.k), int32_t(u.sg), int32_t(mode)},
                       u.required ? u.sg : 0u});
        });
    return {pipeline, rows};
  }
  return {};
}

}  // namespace vkml::ops
