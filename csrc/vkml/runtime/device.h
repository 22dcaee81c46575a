#pragma once
// One logical Vulkan device: its queue, memory pools, stream and pipelines.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "vkml/runtime/device_errors.h"
#include "vkml/runtime/device_info.h"
#include "vkml/runtime/memory.h"
#include "vkml/runtime/pipelines.h"
#include "vkml/runtime/profiler.h"
#include "vkml/runtime/stream.h"
#include "vkml/runtime/timer.h"
#include "vkml/runtime/value_bounds.h"
#include "vkml/runtime/vk_api.h"

namespace vkml {

class Device {
 public:
  Device(VkPhysicalDevice physical, const DeviceInfo& info, int index);
  ~Device();
  Device(const Device&) = delete;

  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const DeviceInfo& info() const { return info_; }
  int index() const { return index_; }
  // Pipelines are created with their compiler statistics captured
  // (TORCH_VKML_PIPELINE_STATS=1 on a device with DeviceInfo::pipeline_statistics).
  bool captures_statistics() const { return captures_statistics_; }

  MemoryPool& memory() { return *memory_; }
  MemoryPool& staging() { return *staging_; }
  Stream& stream() { return *stream_; }
  // Value checks noted by kernels, raised at the host's next read (device_errors.h).
  DeviceErrors& errors() { return *errors_; }
  // Waits for all recorded work, then raises what its kernels' value checks found.
  void synchronize();
  Pipelines& pipelines() { return *pipelines_; }
  // Known ranges of integer tensors' values (index bounds checks without a sync).
  ValueBounds& value_bounds() { return value_bounds_; }
  // Device-clock timestamps; the query pools are created on first use.
  Timer& timer();

  // Per-kernel device time of the work recorded between the two calls (profiler.h).
  // start_profiling() while profiling restarts the count.
  void start_profiling();
  std::vector<Profiler::Kernel> stop_profiling();

  // Waits for the GPU, then returns unused blocks of both pools to the driver.
  void release_cached_memory();

  // An op family's per-device state that owns Vulkan objects (VkFFT's plans): made by
  // `make` on first use under `key`, destroyed with the device once the GPU is idle,
  // before the stream and the pools it may still return memory to.
  class Attachment {
   public:
    virtual ~Attachment() = default;
  };
  Attachment& attachment(const std::string& key,
                         const std::function<std::unique_ptr<Attachment>()>& make);

  // Set once a Vulkan call reported VK_ERROR_DEVICE_LOST; every later use throws.
  bool lost() const { return lost_.load(); }
  void mark_lost() { lost_.store(true); }

 private:
  VkPhysicalDevice physical_;
  DeviceInfo info_;
  int index_;
  bool captures_statistics_ = false;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  ValueBounds value_bounds_;  // before the pools and the stream, which use it
  std::unique_ptr<MemoryPool> memory_;
  std::unique_ptr<MemoryPool> staging_;
  std::unique_ptr<DeviceErrors> errors_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Pipelines> pipelines_;
  std::once_flag timer_once_;
  std::unique_ptr<Timer> timer_;
  std::mutex profiler_mutex_;
  std::unique_ptr<Profiler> profiler_;
  std::atomic<bool> lost_{false};
  std::mutex attachments_mutex_;
  std::map<std::string, std::unique_ptr<Attachment>> attachments_;
};

}  // namespace vkml
