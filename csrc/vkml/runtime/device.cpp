#include "vkml/runtime/device.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/runtime/physical_device.h"

namespace vkml {

Device::Device(VkPhysicalDevice physical, const DeviceInfo& info, int index)
    : physical_(physical), info_(info), index_(index) {
  uint32_t n = 0;
  vk::vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vk::vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
  int chosen = -1;
  for (uint32_t i = 0; i < n; ++i) {
    // The first compute-capable family is the main one on every driver we know;
    // it also has valid timestamps.
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && chosen < 0) chosen = int(i);
  }
  if (chosen < 0) fail(ErrorKind::Unavailable, info.name + " has no compute queue");
  queue_family_ = uint32_t(chosen);

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;

  // Compiler statistics only on request: a driver may compile differently, or skip its
  // caches, for pipelines that capture them.
  const char* stats = std::getenv("TORCH_VKML_PIPELINE_STATS");
  captures_statistics_ = info.pipeline_statistics && stats && std::string(stats) == "1";
  EnabledFeatures features;
  choose_features(physical, info, features, captures_statistics_);
  std::vector<const char*> extensions;
  if (info.supports_memory_budget) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (info.coopmat_m != 0 || info.coopmat_bf16_m != 0)
    extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (info.coopmat_bf16_m != 0) extensions.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  if (captures_statistics_)
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (info.calibrated_timestamps) extensions.push_back(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);

  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &features.base;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VKML_CHECK_VK(vk::vkCreateDevice(physical, &ci, nullptr, &device_));
  vk::vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  memory_ = std::make_unique<MemoryPool>(*this, false);
  staging_ = std::make_unique<MemoryPool>(*this, true);
  errors_ = std::make_unique<DeviceErrors>(*staging_);
  pipelines_ = std::make_unique<Pipelines>(*this);
  stream_ = std::make_unique<Stream>(*this);
}

Device::~Device() {
  if (device_) vk::vkDeviceWaitIdle(device_);
  attachments_.clear();
  stream_.reset();
  profiler_.reset();
  timer_.reset();
  pipelines_.reset();
  errors_.reset();
  staging_.reset();
  memory_.reset();
  if (device_) vk::vkDestroyDevice(device_, nullptr);
}

Device::Attachment& Device::attachment(const std::string& key,
                                       const std::function<std::unique_ptr<Attachment>()>& make) {
  std::lock_guard<std::mutex> lock(attachments_mutex_);
  auto& slot = attachments_[key];
  if (!slot) slot = make();
  return *slot;
}

Timer& Device::timer() {
  std::call_once(timer_once_, [this] { timer_ = std::make_unique<Timer>(*this); });
  return *timer_;
}

void Device::start_profiling() {
  std::lock_guard<std::mutex> lock(profiler_mutex_);
  auto next = std::make_unique<Profiler>(*this);
  stream_->set_profiler(next.get());
  stream_->synchronize();  // the old profiler's commands are done before it goes
  profiler_ = std::move(next);
}

std::vector<Profiler::Kernel> Device::stop_profiling() {
  std::lock_guard<std::mutex> lock(profiler_mutex_);
  VKML_CHECK_ARG(profiler_ != nullptr, "vkml: the profiler was not started");
  stream_->set_profiler(nullptr);
  stream_->synchronize();
  std::unique_ptr<Profiler> done = std::move(profiler_);
  return done->collect();
}

void Device::synchronize() {
  stream_->synchronize();
  errors_->raise_pending();
}

void Device::release_cached_memory() {
  stream_->synchronize();
  memory_->empty_cache();
  staging_->empty_cache();
}

}  // namespace vkml
