#include "vkml/runtime/physical_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace vkml {

EnabledFeatures::EnabledFeatures() { chain(false, false, false); }

void EnabledFeatures::chain(bool with_v13, bool with_coopmat, bool with_bf16,
                            bool with_executables) {
  base.pNext = &v11;
  v11.pNext = &v12;
  void** tail = &v12.pNext;
  *tail = nullptr;
  auto append = [&tail](auto& next) {
    *tail = &next;
    tail = &next.pNext;
    *tail = nullptr;
  };
  if (with_v13) append(v13);
  if (with_coopmat) append(coopmat);
  if (with_bf16) append(bf16);
  if (with_executables) append(executables);
}

namespace {

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string vendor_name(uint32_t id, VkDriverId driver) {
  if (driver == VK_DRIVER_ID_MESA_LLVMPIPE) return "Mesa (lavapipe)";
  switch (id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x106B:
      return "Apple";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x10005:
      return "Mesa";
    default:
      return "unknown";
  }
}

// TORCH_VKML_NO_FP64=1 treats every device as one without shaderFloat64 (many Intel
// and mobile GPUs), so that their code paths are tested where float64 exists; the
// feature is then not enabled either, so a float64 kernel fails validation.
bool fp64_hidden() {
  const char* v = std::getenv("TORCH_VKML_NO_FP64");
  return v && *v && std::strcmp(v, "0") != 0;
}

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vk::vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vk::vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  for (auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Whether the device offers calibrated timestamps of its own clock and of
// CLOCK_MONOTONIC.
// The queue count of the first compute-capable family (the one Device takes), capped.
uint32_t stream_queues(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vk::vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vk::vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  uint32_t queues = 1;
  for (const VkQueueFamilyProperties& f : families) {
    if (f.queueFlags & VK_QUEUE_COMPUTE_BIT) {
      queues = std::min(f.queueCount, DeviceInfo::kMaxStreamQueues);
      break;
    }
  }
  if (const char* env = std::getenv("TORCH_VKML_QUEUES"); env && std::atoi(env) > 0)
    queues = std::min(queues, uint32_t(std::atoi(env)));
  return std::max<uint32_t>(queues, 1);
}

bool calibrated_domains(VkPhysicalDevice pd) {
  if (!vk::vkGetPhysicalDeviceCalibrateableTimeDomainsEXT ||
      !has_extension(pd, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME))
    return false;
  uint32_t n = 0;
  if (vk::vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(pd, &n, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkTimeDomainEXT> domains(n);
  if (vk::vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(pd, &n, domains.data()) != VK_SUCCESS)
    return false;
  bool device = false, monotonic = false;
  for (VkTimeDomainEXT d : domains) {
    device |= d == VK_TIME_DOMAIN_DEVICE_EXT;
    monotonic |= d == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
  }
  return device && monotonic;
}

// The 16-bit x 16-bit -> fp32 subgroup shapes (fp16, and bf16 where the device
// has VK_KHR_shader_bfloat16's matrix types) our GEMM kernel can tile: 16x16x16
// where offered (NVIDIA, AMD), else the smallest with sides in 8..32 (Intel
// offers 8x16x16). `f`: the device's features, the extensions' chained.
void query_coopmat(VkPhysicalDevice pd, const EnabledFeatures& f, bool bf16, DeviceInfo& info) {
  // Turning the memory model on makes device-scope atomics (every other shader's
  // atomicAdd) invalid unless its device-scope feature is on too.
  if (!f.coopmat.cooperativeMatrix || !f.v12.vulkanMemoryModel ||
      !f.v12.vulkanMemoryModelDeviceScope || !f.v12.shaderFloat16)
    return;
  uint32_t n = 0;
  if (vk::vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, nullptr) != VK_SUCCESS) return;
  std::vector<VkCooperativeMatrixPropertiesKHR> shapes(n);
  for (auto& s : shapes) s = {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
  if (vk::vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, shapes.data()) != VK_SUCCESS)
    return;
  auto side = [](uint32_t v) { return v == 8 || v == 16 || v == 32; };
  auto pick = [&](VkComponentTypeKHR type, uint32_t& m, uint32_t& n_, uint32_t& k) {
    uint32_t best = 0;
    for (const auto& s : shapes) {
      if (s.scope != VK_SCOPE_SUBGROUP_KHR || s.AType != type || s.BType != type ||
          s.CType != VK_COMPONENT_TYPE_FLOAT32_KHR ||
          s.ResultType != VK_COMPONENT_TYPE_FLOAT32_KHR || s.saturatingAccumulation)
        continue;
      if (!side(s.MSize) || !side(s.NSize) || !side(s.KSize)) continue;
      uint32_t rank =
          s.MSize == 16 && s.NSize == 16 && s.KSize == 16 ? 0 : s.MSize * s.NSize * s.KSize;
      if (m == 0 || rank < best) {
        best = rank;
        m = s.MSize;
        n_ = s.NSize;
        k = s.KSize;
      }
    }
  };
  pick(VK_COMPONENT_TYPE_FLOAT16_KHR, info.coopmat_m, info.coopmat_n, info.coopmat_k);
  // The bf16 kernel writes its results as bits through 16-bit integers.
  if (bf16 && f.bf16.shaderBFloat16Type && f.bf16.shaderBFloat16CooperativeMatrix &&
      info.supports_int16)
    pick(VK_COMPONENT_TYPE_BFLOAT16_KHR, info.coopmat_bf16_m, info.coopmat_bf16_n,
         info.coopmat_bf16_k);
}

// Compute pipelines that require a subgroup size (Vulkan 1.3 core). `f`: the
// device's features, the 1.3 ones chained.
void query_subgroup_control(VkPhysicalDevice pd, const EnabledFeatures& f, DeviceInfo& info) {
  VkPhysicalDeviceVulkan13Properties p13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &p13;
  vk::vkGetPhysicalDeviceProperties2(pd, &props);
  if (!f.v13.subgroupSizeControl || !f.v13.computeFullSubgroups ||
      !(p13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) || p13.minSubgroupSize == 0)
    return;
  info.subgroup_size_control = true;
  info.min_subgroup_size = p13.minSubgroupSize;
  info.max_subgroup_size = p13.maxSubgroupSize;
}

}  // namespace

DeviceInfo query_device_info(VkPhysicalDevice pd, uint32_t instance_api) {
  DeviceInfo info;
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  subgroup.pNext = &driver;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  vk::vkGetPhysicalDeviceProperties2(pd, &props);
  const auto& p = props.properties;
  info.name = p.deviceName;
  info.device_type = type_name(p.deviceType);
  info.vendor_id = p.vendorID;
  info.device_id = p.deviceID;
  info.api_version = p.apiVersion;
  info.vendor = vendor_name(p.vendorID, driver.driverID);
  info.driver_name = driver.driverName;
  info.driver_info = driver.driverInfo;
  info.driver_version = p.driverVersion;
  // Mesa encodes its own version, VK_MAKE_VERSION(major, minor, patch); gallivm's
  // shared limit of 65535 loop iterations went with its move to LLVM's own control
  // flow (seen on 22.3, gone by 26; 24.1 is the conservative boundary).
  if (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE && p.driverVersion < ((24u << 22) | (1u << 12)))
    info.loop_iteration_limit = 65535;
  info.queues = stream_queues(pd);
  info.copies_by_kernel = p.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (const char* env = std::getenv("TORCH_VKML_COPY_KERNEL"); env && *env)
    info.copies_by_kernel = std::string(env) != "0";
  info.subgroup_size = subgroup.subgroupSize;
  info.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  info.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  info.max_shared_memory = p.limits.maxComputeSharedMemorySize;
  info.timestamp_period_ns = p.limits.timestampPeriod;

  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props_m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props_m3.pNext = &m3;
  vk::vkGetPhysicalDeviceProperties2(pd, &props_m3);
  info.max_allocation_size = m3.maxMemoryAllocationSize;

  VkPhysicalDeviceMemoryProperties mem;
  vk::vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    bool local = mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    info.heaps.push_back({mem.memoryHeaps[i].size, local});
    if (local) info.total_memory += mem.memoryHeaps[i].size;
  }
  info.supports_memory_budget = has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (info.supports_memory_budget && vk::vkGetPhysicalDeviceMemoryProperties2) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mem2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    mem2.pNext = &budget;
    vk::vkGetPhysicalDeviceMemoryProperties2(pd, &mem2);
    for (size_t i = 0; i < info.heaps.size(); ++i) {
      info.heaps[i].budget = budget.heapBudget[i];
      info.heaps[i].usage = budget.heapUsage[i];
    }
  }

  // One query, with the 1.3 and cooperative-matrix structs chained where they exist.
  const bool api13 = std::min(instance_api, p.apiVersion) >= VK_API_VERSION_1_3;
  const bool coopmat = vk::vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR &&
                       has_extension(pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  const bool bf16 = coopmat && has_extension(pd, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  const bool executables = vk::vkGetPipelineExecutablePropertiesKHR &&
                           vk::vkGetPipelineExecutableStatisticsKHR &&
                           has_extension(pd, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  info.calibrated_timestamps = calibrated_domains(pd);
  EnabledFeatures f;
  f.chain(api13, coopmat, bf16, executables);
  vk::vkGetPhysicalDeviceFeatures2(pd, &f.base);
  info.pipeline_statistics = executables && f.executables.pipelineExecutableInfo;
  info.supports_fp64 = f.base.features.shaderFloat64 && !fp64_hidden();
  info.supports_int64 = f.base.features.shaderInt64;
  info.supports_int64_atomics = f.v12.shaderBufferInt64Atomics;
  info.supports_int16 = f.base.features.shaderInt16;
  info.supports_fp16 = f.v12.shaderFloat16 && f.v11.storageBuffer16BitAccess;
  if (api13) query_subgroup_control(pd, f, info);
  if (coopmat && info.supports_fp16) query_coopmat(pd, f, bf16, info);

  std::string missing;
  auto need = [&](bool ok, const char* what) {
    if (!ok) missing += std::string(missing.empty() ? "" : ", ") + what;
  };
  need(p.apiVersion >= VK_API_VERSION_1_2, "Vulkan 1.2");
  need(f.v12.bufferDeviceAddress, "bufferDeviceAddress");
  need(f.v12.timelineSemaphore, "timelineSemaphore");
  need(f.v12.scalarBlockLayout, "scalarBlockLayout");
  need(f.v12.storageBuffer8BitAccess, "storageBuffer8BitAccess");
  need(f.v12.shaderInt8, "shaderInt8");
  need(f.base.features.shaderInt64, "shaderInt64");
  need(p.limits.maxPushConstantsSize >= 128, "128 bytes of push constants");
  if (!missing.empty()) info.unsupported_reason = "missing " + missing;
  return info;
}

void choose_features(VkPhysicalDevice pd, const DeviceInfo& info, EnabledFeatures& out,
                     bool statistics) {
  EnabledFeatures has;
  vk::vkGetPhysicalDeviceFeatures2(pd, &has.base);
  auto& b = out.base.features;
  b.shaderInt64 = has.base.features.shaderInt64;
  b.shaderInt16 = has.base.features.shaderInt16;
  b.shaderFloat64 = info.supports_fp64;
  out.v11.storageBuffer16BitAccess = has.v11.storageBuffer16BitAccess;
  out.v12.bufferDeviceAddress = VK_TRUE;
  out.v12.timelineSemaphore = VK_TRUE;
  out.v12.scalarBlockLayout = VK_TRUE;
  out.v12.storageBuffer8BitAccess = VK_TRUE;
  out.v12.shaderInt8 = VK_TRUE;
  out.v12.shaderFloat16 = has.v12.shaderFloat16;
  out.v12.shaderBufferInt64Atomics = info.supports_int64_atomics;
  out.v12.hostQueryReset = has.v12.hostQueryReset;
  const bool coopmat = info.coopmat_m != 0 || info.coopmat_bf16_m != 0;
  const bool bf16 = info.coopmat_bf16_m != 0;
  statistics = statistics && info.pipeline_statistics;
  out.chain(info.subgroup_size_control, coopmat, bf16, statistics);
  out.executables.pipelineExecutableInfo = statistics;
  if (info.subgroup_size_control) {
    out.v13.subgroupSizeControl = VK_TRUE;
    out.v13.computeFullSubgroups = VK_TRUE;
  }
  if (coopmat) {
    // The extension's shaders use the Vulkan memory model, as SPIR-V requires.
    out.coopmat.cooperativeMatrix = VK_TRUE;
    out.v12.vulkanMemoryModel = VK_TRUE;
    out.v12.vulkanMemoryModelDeviceScope = VK_TRUE;
  }
  if (bf16) {
    out.bf16.shaderBFloat16Type = VK_TRUE;
    out.bf16.shaderBFloat16CooperativeMatrix = VK_TRUE;
  }
}

}  // namespace vkml
