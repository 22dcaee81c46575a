#pragma once
// What a physical device offers, read once at enumeration.
#include <cstdint>
#include <string>
#include <vector>

namespace vkml {

struct MemoryHeapInfo {
  uint64_t size = 0;
  bool device_local = false;
  // VK_EXT_memory_budget, read at enumeration: what this process may allocate from the
  // heap (the driver's estimate, other processes' use taken off) and what it used then.
  // Both 0 without the extension.
  uint64_t budget = 0;
  uint64_t usage = 0;
};

struct DeviceInfo {
  std::string name;
  std::string device_type;  // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  std::string vendor;  // "NVIDIA", "AMD", "Intel", "Mesa (lavapipe)", ...
  std::string driver_name;
  std::string driver_info;
  uint32_t driver_version = 0;  // VkPhysicalDeviceProperties::driverVersion, vendor-encoded
  uint32_t api_version = 0;
  std::vector<MemoryHeapInfo> heaps;
  uint64_t total_memory = 0;  // sum of device-local heaps
  uint32_t subgroup_size = 0;
  // Vulkan 1.3 subgroup size control for compute (pipelines may require a size in
  // [min, max] with full subgroups); sizes 0 without it.
  bool subgroup_size_control = false;
  uint32_t min_subgroup_size = 0, max_subgroup_size = 0;
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_allocation_size = 0;
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_shared_memory = 0;
  float timestamp_period_ns = 0;
  bool supports_fp16 = false;  // shaderFloat16 + 16-bit storage
  bool supports_fp64 = false;
  bool supports_int64 = false;
  // shaderBufferInt64Atomics: 64-bit compare-and-swap on buffers (float64 scatter-adds).
  bool supports_int64_atomics = false;
  bool supports_int16 = false;
  bool supports_memory_budget = false;
  // A VK_KHR_cooperative_matrix shape for fp16 x fp16 -> fp32 at subgroup scope
  // (M x K times K x N), all zero when the device has none.
  uint32_t coopmat_m = 0, coopmat_n = 0, coopmat_k = 0;
  // Likewise for bf16 x bf16 -> fp32 (VK_KHR_shader_bfloat16's matrix types).
  uint32_t coopmat_bf16_m = 0, coopmat_bf16_n = 0, coopmat_bf16_k = 0;
  // VK_KHR_pipeline_executable_properties: the driver reports its compiler's statistics
  // per pipeline (registers, spills, ...; TORCH_VKML_PIPELINE_STATS=1 turns it on).
  bool pipeline_statistics = false;
  // VK_EXT_calibrated_timestamps with the device's clock and CLOCK_MONOTONIC (the
  // host's steady clock on Linux): the profiler maps device ticks to host time through
  // one calibrated pair instead of a submit-and-wait window.
  bool calibrated_timestamps = false;
  // Mesa's llvmpipe before 24.1 (lavapipe) guards against endless loops by ending every
  // loop of an invocation once its loops together ran this many iterations, silently:
  // a kernel whose one invocation iterates more computes garbage there. 0: no limit.
  uint32_t loop_iteration_limit = 0;
  // Queues of the compute family the device's streams use: the default stream one of
  // its own, side streams the rest (all share one where the family has one, as on
  // lavapipe). Up to kMaxStreamQueues; TORCH_VKML_QUEUES lowers it.
  uint32_t queues = 1;
  static constexpr uint32_t kMaxStreamQueues = 4;
  // Contiguous device-to-device copies of whole words run as a kernel
  // (shaders/copy_words.comp) rather than a transfer command: on GPUs, whose copy engines
  // are slower than their memory; not on CPU drivers, whose transfer is a memcpy (8x
  // faster than a kernel on lavapipe). TORCH_VKML_COPY_KERNEL=0/1 overrides.
  bool copies_by_kernel = true;
  // Empty when the device has what torch-vkml needs; otherwise why not.
  std::string unsupported_reason;
};

}  // namespace vkml
