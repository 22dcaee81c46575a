#pragma once
// The asynchronous stream: ops record dispatches into a command buffer and
// return; batches are submitted every few dispatches so the GPU works while
// the host records. The host waits only where it needs data (read-backs,
// synchronize, memory pressure), on a timeline semaphore. A device has several
// (Device::stream(slot)); one waits for another's work only through wait_for.
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "vkml/runtime/hazards.h"
#include "vkml/runtime/ring.h"
#include "vkml/runtime/vk_api.h"
#include "vkml/runtime/vk_owned.h"

namespace vkml {

class Device;
class MemoryPool;
class Profiler;

class Stream {
 public:
  // `queue`: which of the device's queues it submits to (Device::queue).
  Stream(Device& device, int slot, int queue);
  ~Stream();
  Stream(const Stream&) = delete;

  // Records a compute dispatch. push_size <= 128 bytes. `access` lists the
  // memory it reads and writes (see hazards.h); without it the dispatch is
  // fenced by barriers on both sides.
  void dispatch(VkPipeline pipeline, const void* push, uint32_t push_size, uint32_t gx,
                uint32_t gy = 1, uint32_t gz = 1, const Access* access = nullptr);
  void copy_buffer(VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset,
                   uint64_t size, const Access* access = nullptr);
  // Lets a library that records its own commands (VkFFT) append them: `record` gets
  // the command buffer after the barrier `access` needs, binds its own pipelines and
  // descriptor sets and orders its own steps. Timed as one command named `label`.
  // Returns the timeline value after which the commands have run.
  uint64_t record_external(const char* label, const Access* access,
                           const std::function<void(VkCommandBuffer)>& record);
  // Runs `use` with the queue to itself: a library's one-off set-up submissions,
  // which it waits for on a fence of its own.
  void with_queue(const std::function<void(VkQueue)>& use);
  // Frees `address` back to `pool` once the work recorded so far has run
  // (staging memory the GPU still has to read or write). With `left`, only the last of
  // the streams sharing that count frees it, and deletes the count.
  void free_after_use(MemoryPool& pool, uint64_t address, std::atomic<int>* left = nullptr);
  // Work recorded on this stream from now on starts after `other` reached `value`
  // (a timeline value of it: an event): a semaphore wait on the GPU, no host wait.
  // What was recorded before is submitted first, so it does not wait.
  void wait_for(Stream& other, uint64_t value);
  // Resets `query` of a timestamp pool and writes the device clock into it once
  // all commands recorded so far have finished. Returns the timeline value after
  // which the result can be read (see Timer).
  uint64_t write_timestamp(VkQueryPool pool, uint32_t query);

  // Times every command from now on (profiler.h); null stops. The caller owns it.
  void set_profiler(Profiler* profiler);

  // Submits what was recorded; returns the timeline value that marks its end.
  uint64_t flush();
  // The timeline value that will mark the end of the work recorded so far, without
  // submitting it (flush() or a later wait does).
  uint64_t recorded_value();
  int slot() const { return slot_; }
  // For tests of the ordering between streams: work submitted after hold() waits on the
  // GPU until release_hold() (a semaphore the host signals), so the stream stays busy
  // for as long as a test needs. Streams sharing its queue wait behind it.
  void hold();
  void release_hold();
  // Blocks until the GPU reached `value` (flushes first if it is not submitted).
  void wait(uint64_t value);
  // Blocks the calling thread until the GPU reached `value` without holding the
  // stream, so other threads keep recording meanwhile (a helper thread that waits
  // for copies into host buffers). Not a sync: the GPU does not run dry for it.
  void wait_in_background(uint64_t value);
  void synchronize();
  uint64_t completed_value();
  uint64_t dispatch_count() const { return total_dispatches_; }
  uint64_t submit_count() const { return total_submits_; }
  uint64_t barrier_count() const { return total_barriers_; }
  // Waits for work the host had not yet seen finish (read-backs, .item(),
  // synchronize): each one lets the GPU run dry before the host queues more.
  uint64_t sync_count() const { return total_syncs_; }
  // Submitted batches not yet seen finished (at most kMaxInFlight).
  size_t in_flight();

  // Dispatches per submitted batch (TORCH_VKML_BATCH overrides). A batch is
  // also submitted early once it holds kFlushWorkgroups of work, so the GPU
  // starts on big kernels while the host records the next ones. After a wait
  // that left the GPU idle, batches start at kFirstBatchAfterIdle dispatches and
  // double up to the batch size: the GPU starts after a few dispatches instead
  // of idling until a whole batch is recorded (a training loop's .item()).
  void set_batch_size(uint32_t n) { batch_size_ = batch_limit_ = n ? n : 1; }
  static constexpr uint64_t kFlushWorkgroups = 16384;
  // Submitted batches the host may run ahead of the GPU by: past this a submit
  // waits for the oldest one (counted as a sync), as CUDA's launch queue blocks
  // when full, so command buffers and deferred frees stay bounded.
  static constexpr size_t kMaxInFlight = 256;
  static constexpr uint32_t kFirstBatchAfterIdle = 4;

 private:
  struct Deferred {
    MemoryPool* pool;
    uint64_t address;
    std::atomic<int>* left;  // free_after_use's
  };
  struct Wait {
    VkSemaphore timeline;
    uint64_t value;
  };
  struct Batch {
    VkCommandBuffer cb;
    uint64_t value;
    std::vector<Deferred> releases;
  };

  void begin_if_needed();                  // mutex held
  void barrier_for(const Access* access);  // mutex held
  uint64_t flush_locked();
  void submit_through(uint64_t value);     // flushes if `value` is not submitted yet
  void wait_locked(uint64_t value);        // mutex held; value submitted
  void wait_for_timeline(uint64_t value);  // no lock needed; value submitted
  void retire(uint64_t completed);         // mutex held
  static void release(const Deferred& d);
  void check_lost(VkResult r, const char* what);

  Device& device_;
  int slot_;
  int queue_;
  std::mutex mutex_;
  // Owned members: if the constructor throws after creating one, it is destroyed.
  VkOwned<VkCommandPool> pool_;
  VkOwned<VkSemaphore> timeline_;
  VkCommandBuffer current_ = VK_NULL_HANDLE;
  std::vector<Deferred> current_releases_;
  std::vector<Wait> waits_;    // for the next submission (wait_for, hold)
  VkOwned<VkSemaphore> hold_;  // hold()'s, made on first use
  uint64_t hold_value_ = 0;    // the value release_hold() signals
  VkPipeline bound_ = VK_NULL_HANDLE;
  uint32_t recorded_ = 0;
  uint64_t recorded_workgroups_ = 0;
  uint32_t batch_size_ = 32;
  uint32_t batch_limit_ = 32;  // this batch's: ramps up to batch_size_ after idling
  uint64_t submitted_value_ = 0;
  uint64_t completed_value_ = 0;
  uint64_t total_dispatches_ = 0;
  uint64_t total_submits_ = 0;
  uint64_t total_barriers_ = 0;
  uint64_t total_syncs_ = 0;
  HazardTracker hazards_;
  Profiler* profiler_ = nullptr;
  // Submitted batches, oldest first; a slot's release list keeps its storage and
  // becomes the next batch's, so steady-state submissions allocate nothing.
  Ring<Batch> in_flight_{kMaxInFlight + 1};
  std::vector<VkCommandBuffer> spare_;
};

}  // namespace vkml
