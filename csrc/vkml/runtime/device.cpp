#include "vkml/runtime/device.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/runtime/deferred.h"
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

  // Side streams get queues of their own where the family has several, so their work
  // can overlap the default stream's (DeviceInfo::queues).
  const uint32_t queues = std::min(info.queues, families[queue_family_].queueCount);
  std::vector<float> priorities(queues, 1.0f);
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = queues;
  qi.pQueuePriorities = priorities.data();

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
  for (uint32_t i = 0; i < queues; ++i) {
    VkQueue q = VK_NULL_HANDLE;
    vk::vkGetDeviceQueue(device_, queue_family_, i, &q);
    queues_.push_back(q);
    queue_mutexes_.push_back(std::make_unique<std::mutex>());
  }

  memory_ = std::make_unique<MemoryPool>(*this, false);
  staging_ = std::make_unique<MemoryPool>(*this, true);
  errors_ = std::make_unique<DeviceErrors>(*staging_);
  pipelines_ = std::make_unique<Pipelines>(*this);
  make_stream(0);
}

Device::~Device() {
  if (device_) vk::vkDeviceWaitIdle(device_);
  attachments_.clear();
  for (auto& s : owned_streams_) s.reset();
  profiler_.reset();
  timer_.reset();
  pipelines_.reset();
  errors_.reset();
  staging_.reset();
  memory_.reset();
  if (device_) vk::vkDestroyDevice(device_, nullptr);
}

namespace {
// Per thread, the current stream slot of each device index (absent: 0).
thread_local std::vector<uint8_t> t_stream_slots;
}  // namespace

int current_stream_slot(int device_index) {
  const auto i = size_t(device_index);
  return i < t_stream_slots.size() ? t_stream_slots[i] : 0;
}

void set_current_stream_slot(int device_index, int slot) {
  if (current_stream_slot(device_index) == slot) return;
  record_deferred();  // held-back work belongs to the stream that was current
  const auto i = size_t(device_index);
  if (i >= t_stream_slots.size()) {
    if (slot == 0) return;
    t_stream_slots.resize(i + 1, 0);
  }
  t_stream_slots[i] = uint8_t(slot);
}

Stream& Device::make_stream(int slot) {
  VKML_CHECK_ARG(slot >= 0 && slot < kStreamSlots, "vkml: no stream slot " + std::to_string(slot));
  std::lock_guard<std::mutex> lock(streams_mutex_);
  if (Stream* s = streams_[size_t(slot)].load(std::memory_order_acquire)) return *s;
  // The default stream has queue 0 to itself where there are several; the pool shares
  // the others.
  const int n = queue_count();
  const int queue = slot == 0 || n == 1 ? 0 : 1 + (slot - 1) % (n - 1);
  auto made = std::make_unique<Stream>(*this, slot, queue);
  if (attached_profiler_) made->set_profiler(attached_profiler_);
  Stream* s = made.get();
  owned_streams_[size_t(slot)] = std::move(made);
  streams_[size_t(slot)].store(s, std::memory_order_release);
  return *s;
}

std::vector<Stream*> Device::streams() {
  std::vector<Stream*> out;
  for (auto& s : streams_)
    if (Stream* p = s.load(std::memory_order_acquire)) out.push_back(p);
  return out;
}

void Device::free_after_all_streams(MemoryPool& pool, uint64_t address) {
  std::vector<Stream*> all = streams();
  if (all.size() == 1) return all[0]->free_after_use(pool, address);
  // Freed by whichever stream finishes last: each holds one count.
  auto* left = new std::atomic<int>(int(all.size()));
  for (Stream* s : all) s->free_after_use(pool, address, left);
}

void Device::attach_profiler(Profiler* profiler) {
  record_deferred();  // may make a stream: before the lock
  std::lock_guard<std::mutex> lock(streams_mutex_);
  attached_profiler_ = profiler;
  for (auto& s : streams_)
    if (Stream* p = s.load(std::memory_order_acquire)) p->set_profiler(profiler);
}

void Device::wait_idle() {
  for (Stream* s : streams()) s->synchronize();
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
  attach_profiler(next.get());
  wait_idle();  // the old profiler's commands are done before it goes
  profiler_ = std::move(next);
}

std::vector<Profiler::Kernel> Device::stop_profiling() {
  std::lock_guard<std::mutex> lock(profiler_mutex_);
  VKML_CHECK_ARG(profiler_ != nullptr, "vkml: the profiler was not started");
  attach_profiler(nullptr);
  wait_idle();
  std::unique_ptr<Profiler> done = std::move(profiler_);
  return done->collect();
}

void Device::synchronize() {
  wait_idle();
  errors_->raise_pending();
}

void Device::release_cached_memory() {
  wait_idle();
  memory_->collect_freed_later();  // every stream is idle: all of it is free now
  memory_->empty_cache();
  staging_->empty_cache();
}

}  // namespace vkml
