#pragma once
// Move-only owners of Vulkan device-level handles. A handle is wrapped the moment it
// is created, so an exception between its creation and its hand-over (a failed
// bind or map, a second create that throws) destroys it instead of leaking it, and
// the classes that keep handles destroy them without hand-written loops.
#include <type_traits>
#include <utility>

#include "vkml/runtime/vk_api.h"

namespace vkml {

// How each handle type is destroyed. Non-dispatchable handles are distinct pointer
// types on 64-bit platforms, which the project requires (buffer device addresses).
static_assert(sizeof(void*) == 8, "vkml needs a 64-bit platform");
template <class H>
struct VkDestroyer;
#define VKML_VK_DESTROYER(H, call)                                                        \
  template <>                                                                             \
  struct VkDestroyer<H> {                                                                 \
    static void destroy(VkDevice device, H handle) { vk::call(device, handle, nullptr); } \
  };
VKML_VK_DESTROYER(VkBuffer, vkDestroyBuffer)
VKML_VK_DESTROYER(VkDeviceMemory, vkFreeMemory)         // also unmaps it
VKML_VK_DESTROYER(VkCommandPool, vkDestroyCommandPool)  // with its command buffers
VKML_VK_DESTROYER(VkSemaphore, vkDestroySemaphore)
VKML_VK_DESTROYER(VkQueryPool, vkDestroyQueryPool)
VKML_VK_DESTROYER(VkShaderModule, vkDestroyShaderModule)
VKML_VK_DESTROYER(VkPipeline, vkDestroyPipeline)
VKML_VK_DESTROYER(VkPipelineLayout, vkDestroyPipelineLayout)
VKML_VK_DESTROYER(VkPipelineCache, vkDestroyPipelineCache)
VKML_VK_DESTROYER(VkFence, vkDestroyFence)
#undef VKML_VK_DESTROYER

template <class H>
class VkOwned {
 public:
  VkOwned() = default;
  // Empty, for a create call to fill through put().
  explicit VkOwned(VkDevice device) : device_(device) {}
  VkOwned(VkDevice device, H handle) : device_(device), handle_(handle) {}
  VkOwned(VkOwned&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, H(VK_NULL_HANDLE))) {}
  VkOwned& operator=(VkOwned&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, H(VK_NULL_HANDLE));
    }
    return *this;
  }
  VkOwned(const VkOwned&) = delete;
  VkOwned& operator=(const VkOwned&) = delete;
  ~VkOwned() { reset(); }

  H get() const { return handle_; }
  // The address a vkCreate*/vkAllocate* call writes the new handle to (empty first).
  H* put() {
    reset();
    return &handle_;
  }
  // Gives the handle up without destroying it.
  H release() { return std::exchange(handle_, H(VK_NULL_HANDLE)); }
  void reset() {
    if (handle_ != VK_NULL_HANDLE) VkDestroyer<H>::destroy(device_, handle_);
    handle_ = H(VK_NULL_HANDLE);
  }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  H handle_ = VK_NULL_HANDLE;
};

}  // namespace vkml
