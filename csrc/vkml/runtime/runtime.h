#pragma once
// The process-wide Vulkan instance and the list of usable devices.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vkml/runtime/device_info.h"
#include "vkml/runtime/vk_api.h"

namespace vkml {

class Device;

class Runtime {
 public:
  // Created on first use; never throws (an unusable runtime reports why).
  static Runtime& get();
  // The runtime if something already created it, else nullptr (creates nothing).
  static Runtime* existing();
  // True in the child of a fork() made after the runtime was created: Vulkan
  // objects do not survive a fork, so device() throws there and deleters leak.
  static bool in_bad_fork();

  bool available() const { return !devices_.empty(); }
  // Why no device can be used, with what to install; empty when available.
  const std::string& unavailable_reason() const { return unavailable_reason_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  const DeviceInfo& info(int index) const;
  // Creates the logical device on first use. Throws for a bad index, and in a
  // forked child (in_bad_fork()).
  Device& device(int index);
  void check_index(int index) const;
  // The logical device if it was already created, else nullptr (never creates
  // one; nullptr in a forked child).
  Device* created_device(int index);

  // Validation-layer messages (warnings and errors) since the last call.
  std::vector<std::string> take_validation_messages();
  bool validation_enabled() const { return validation_enabled_; }
  VkInstance instance() const { return instance_; }

  ~Runtime();

 private:
  Runtime();
  void init();
  static VkBool32 VKAPI_PTR on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT type,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void* user);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool validation_enabled_ = false;
  bool echo_messages_ = false;
  std::string unavailable_reason_;
  struct Entry {
    VkPhysicalDevice physical;
    DeviceInfo info;
    std::unique_ptr<Device> device;
  };
  std::vector<Entry> devices_;
  std::mutex device_mutex_;
  std::mutex message_mutex_;
  std::vector<std::string> messages_;
};

}  // namespace vkml
