#pragma once
// Reading a physical device's properties and deciding which features to enable.
#include "vkml/runtime/device_info.h"
#include "vkml/runtime/vk_api.h"

namespace vkml {

// `instance_api`: the API version the instance was created with (1.3 structs need it).
DeviceInfo query_device_info(VkPhysicalDevice pd, uint32_t instance_api);

// The feature structs passed to vkCreateDevice: what we need plus what we can
// use, limited to what the device has.
struct EnabledFeatures {
  VkPhysicalDeviceFeatures2 base{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  // Chained only where the device has Vulkan 1.3 / VK_KHR_cooperative_matrix /
  // VK_KHR_shader_bfloat16.
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  EnabledFeatures();
  // Links base -> v11 -> v12 [-> v13] [-> coopmat] [-> bf16] [-> executables].
  void chain(bool with_v13, bool with_coopmat, bool with_bf16, bool with_executables = false);
  EnabledFeatures(const EnabledFeatures&) = delete;
};

// Fills `out` with the subset of the device's features torch-vkml enables, with
// subgroup size control, VK_KHR_cooperative_matrix's and VK_KHR_shader_bfloat16's where
// `info` says the device has them, and pipeline executable info if `statistics`.
void choose_features(VkPhysicalDevice pd, const DeviceInfo& info, EnabledFeatures& out,
                     bool statistics = false);

}  // namespace vkml
