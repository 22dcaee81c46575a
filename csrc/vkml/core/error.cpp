#include "vkml/core/error.h"

#include <vulkan/vulkan_core.h>

namespace vkml {

void fail(ErrorKind kind, const std::string& what) { throw Error(kind, what); }

const char* vk_result_name(int result) {
  switch (static_cast<VkResult>(result)) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    default:
      return "VkResult";
  }
}

void check_vk(int result, const char* call) {
  auto r = static_cast<VkResult>(result);
  if (r == VK_SUCCESS) return;
  std::string msg =
      std::string(call) + " failed: " + vk_result_name(r) + " (" + std::to_string(result) + ")";
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    fail(ErrorKind::OutOfMemory, msg);
  if (r == VK_ERROR_DEVICE_LOST)
    fail(ErrorKind::DeviceLost, msg + ": the GPU driver reset the device; restart the process");
  fail(ErrorKind::Internal, msg);
}

}  // namespace vkml
