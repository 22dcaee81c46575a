#pragma once
// One logical Vulkan device: its queues, memory pools, streams and pipelines.
#include <array>
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

// The calling thread's current stream slot on device `device_index` (0, the default
// stream, until set): what Device::stream() records on. Per thread, as CUDA's current
// stream is.
int current_stream_slot(int device_index);
void set_current_stream_slot(int device_index, int slot);

class Device {
 public:
  Device(VkPhysicalDevice physical, const DeviceInfo& info, int index);
  ~Device();
  Device(const Device&) = delete;

  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  uint32_t queue_family() const { return queue_family_; }
  // The compute queues taken from the family (DeviceInfo::queues), each used under its
  // mutex (vkQueueSubmit needs the queue to itself).
  int queue_count() const { return int(queues_.size()); }
  VkQueue queue(int i) const { return queues_[size_t(i)]; }
  std::mutex& queue_mutex(int i) { return *queue_mutexes_[size_t(i)]; }
  const DeviceInfo& info() const { return info_; }
  int index() const { return index_; }
  // Pipelines are created with their compiler statistics captured
  // (TORCH_VKML_PIPELINE_STATS=1 on a device with DeviceInfo::pipeline_statistics).
  bool captures_statistics() const { return captures_statistics_; }

  MemoryPool& memory() { return *memory_; }
  MemoryPool& staging() { return *staging_; }
  // Streams: slot 0 is the default stream, slots 1..kPoolStreams those the adapter maps
  // torch.Stream ids onto, each made on first use with a queue of its own where the
  // device has more than one (queue_count()), else on the shared one. Work on two
  // streams is ordered only by Stream::wait_for (events), as on CUDA.
  static constexpr int kPoolStreams = 32;
  static constexpr int kStreamSlots = 1 + kPoolStreams;
  // The calling thread's current stream on this device (set_current_stream_slot).
  Stream& stream() { return stream(current_stream_slot(index_)); }
  Stream& stream(int slot) {
    Stream* s = streams_[size_t(slot)].load(std::memory_order_acquire);
    return s ? *s : make_stream(slot);
  }
  // The streams made so far, default first.
  std::vector<Stream*> streams();
  // Frees `address` back to `pool` once every stream's work recorded so far has run
  // (pinned host memory any stream's copies may use).
  void free_after_all_streams(MemoryPool& pool, uint64_t address);
  // Value checks noted by kernels, raised at the host's next read (device_errors.h).
  DeviceErrors& errors() { return *errors_; }
  // Waits for all recorded work on every stream, then raises what its kernels' value
  // checks found.
  void synchronize();
  // Waits for every stream's recorded work; raises nothing.
  void wait_idle();
  Pipelines& pipelines() { return *pipelines_; }
  // Known ranges of integer tensors' values (index bounds checks without a sync).
  ValueBounds& value_bounds() { return value_bounds_; }
  // Device-clock timestamps; the query pools are created on first use.
  Timer& timer();

  // Per-kernel device time of the work recorded between the two calls (profiler.h).
  // start_profiling() while profiling restarts the count.
  void start_profiling();
  std::vector<Profiler::Kernel> stop_profiling();
  // Attaches `profiler` to every stream, and to those made later (null detaches). The
  // caller owns it and waits for the streams (wait_idle) before collecting.
  void attach_profiler(Profiler* profiler);

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
  Stream& make_stream(int slot);

  VkDevice device_ = VK_NULL_HANDLE;
  std::vector<VkQueue> queues_;
  std::vector<std::unique_ptr<std::mutex>> queue_mutexes_;
  uint32_t queue_family_ = 0;
  ValueBounds value_bounds_;  // before the pools and the stream, which use it
  std::unique_ptr<MemoryPool> memory_;
  std::unique_ptr<MemoryPool> staging_;
  std::unique_ptr<DeviceErrors> errors_;
  std::mutex streams_mutex_;
  std::array<std::unique_ptr<Stream>, kStreamSlots> owned_streams_;
  std::array<std::atomic<Stream*>, kStreamSlots> streams_{};
  Profiler* attached_profiler_ = nullptr;  // streams_mutex_
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
