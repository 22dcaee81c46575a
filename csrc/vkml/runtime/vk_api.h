#pragma once
// The Vulkan entry points we use, loaded at run time from the loader library.
// Linking libvulkan would make `import torch_vkml` fail on machines without it.
#include <vulkan/vulkan_core.h>

#include "vkml/runtime/vk_coopmat.h"

#include <string>

#define VKML_GLOBAL_FUNCS(X)                \
  X(vkCreateInstance)                       \
  X(vkEnumerateInstanceLayerProperties)     \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceVersion)

#define VKML_INSTANCE_FUNCS(X)                         \
  X(vkEnumeratePhysicalDevices)                        \
  X(vkGetPhysicalDeviceProperties2)                    \
  X(vkGetPhysicalDeviceFeatures2)                      \
  X(vkGetPhysicalDeviceMemoryProperties)               \
  X(vkGetPhysicalDeviceMemoryProperties2)              \
  X(vkGetPhysicalDeviceQueueFamilyProperties)          \
  X(vkGetPhysicalDeviceProperties)                     \
  X(vkEnumerateDeviceExtensionProperties)              \
  X(vkCreateDevice)                                    \
  X(vkGetDeviceProcAddr)                               \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR) \
  X(vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)

#define VKML_DEBUG_FUNCS(X) X(vkCreateDebugUtilsMessengerEXT)

#define VKML_DEVICE_FUNCS(X)              \
  X(vkDestroyDevice)                      \
  X(vkGetDeviceQueue)                     \
  X(vkQueueSubmit)                        \
  X(vkDeviceWaitIdle)                     \
  X(vkAllocateMemory)                     \
  X(vkFreeMemory)                         \
  X(vkMapMemory)                          \
  X(vkCreateBuffer)                       \
  X(vkDestroyBuffer)                      \
  X(vkGetBufferMemoryRequirements)        \
  X(vkBindBufferMemory)                   \
  X(vkGetBufferDeviceAddress)             \
  X(vkCreateShaderModule)                 \
  X(vkDestroyShaderModule)                \
  X(vkCreatePipelineLayout)               \
  X(vkDestroyPipelineLayout)              \
  X(vkCreateComputePipelines)             \
  X(vkDestroyPipeline)                    \
  X(vkCreatePipelineCache)                \
  X(vkDestroyPipelineCache)               \
  X(vkGetPipelineCacheData)               \
  X(vkCreateCommandPool)                  \
  X(vkDestroyCommandPool)                 \
  X(vkAllocateCommandBuffers)             \
  X(vkBeginCommandBuffer)                 \
  X(vkEndCommandBuffer)                   \
  X(vkResetCommandBuffer)                 \
  X(vkCmdBindPipeline)                    \
  X(vkCmdPushConstants)                   \
  X(vkCmdDispatch)                        \
  X(vkCmdPipelineBarrier)                 \
  X(vkCmdCopyBuffer)                      \
  X(vkCreateSemaphore)                    \
  X(vkDestroySemaphore)                   \
  X(vkWaitSemaphores)                     \
  X(vkGetSemaphoreCounterValue)           \
  X(vkSignalSemaphore)                    \
  X(vkCreateQueryPool)                    \
  X(vkDestroyQueryPool)                   \
  X(vkCmdWriteTimestamp)                  \
  X(vkGetQueryPoolResults)                \
  X(vkCmdResetQueryPool)                  \
  X(vkGetPipelineExecutablePropertiesKHR) \
  X(vkGetPipelineExecutableStatisticsKHR) \
  X(vkGetCalibratedTimestampsEXT)         \
  VKML_LIBRARY_DEVICE_FUNCS(X)

// What VkFFT calls beyond the above: descriptor sets (its kernels bind buffers that
// way), fences and one-off command buffers (its set-up uploads).
#define VKML_LIBRARY_DEVICE_FUNCS(X) \
  X(vkCreateFence)                   \
  X(vkDestroyFence)                  \
  X(vkWaitForFences)                 \
  X(vkResetFences)                   \
  X(vkCreateDescriptorPool)          \
  X(vkDestroyDescriptorPool)         \
  X(vkCreateDescriptorSetLayout)     \
  X(vkDestroyDescriptorSetLayout)    \
  X(vkAllocateDescriptorSets)        \
  X(vkUpdateDescriptorSets)          \
  X(vkCmdBindDescriptorSets)         \
  X(vkFreeCommandBuffers)            \
  X(vkUnmapMemory)

namespace vkml::vk {

#define VKML_DECLARE(name) extern PFN_##name name;
VKML_GLOBAL_FUNCS(VKML_DECLARE)
VKML_INSTANCE_FUNCS(VKML_DECLARE)
VKML_DEBUG_FUNCS(VKML_DECLARE)
VKML_DEVICE_FUNCS(VKML_DECLARE)
#undef VKML_DECLARE

// Opens the loader (TORCH_VKML_LOADER overrides its path). Returns an empty
// string on success, otherwise why it failed.
std::string load_loader();
void load_instance_functions(VkInstance instance);

}  // namespace vkml::vk
