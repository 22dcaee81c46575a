#pragma once
// Reading a physical device's properties and deciding which features to enable.
#include "vkml/runtime/device_info.h"
#include "vkml/runtime/vk_api.h"

namespace vkml {

DeviceInfo query_device_info(VkPhysicalDevice pd);

// The feature structs passed to vkCreateDevice: what we need plus what we can
// use, limited to what the device has.
struct EnabledFeatures {
  VkPhysicalDeviceFeatures2 base{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  // Chained only where the device has VK_KHR_cooperative_matrix.
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  EnabledFeatures();
  void chain_coopmat() { v12.pNext = &coopmat; }
  EnabledFeatures(const EnabledFeatures&) = delete;
};

// Fills `out` with the subset of the device's features torch-vkml enables;
// with `cooperative_matrix` (info.coopmat_m != 0), that extension's too.
void choose_features(VkPhysicalDevice pd, EnabledFeatures& out, bool cooperative_matrix);

}  // namespace vkml
