#include "vkml/runtime/stream.h"

#include "vkml/runtime/deferred.h"

#include <algorithm>
#include <cstdlib>

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/memory.h"
#include "vkml/runtime/profiler.h"

namespace vkml {

Stream::Stream(Device& device, int slot, int queue) : device_(device), slot_(slot), queue_(queue) {
  VkDevice dev = device.handle();
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = device.queue_family();
  pool_ = VkOwned<VkCommandPool>(dev);
  VKML_CHECK_VK(vk::vkCreateCommandPool(dev, &pi, nullptr, pool_.put()));
  VkSemaphoreTypeCreateInfo ti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  ti.initialValue = 0;
  VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  si.pNext = &ti;
  timeline_ = VkOwned<VkSemaphore>(dev);
  VKML_CHECK_VK(vk::vkCreateSemaphore(dev, &si, nullptr, timeline_.put()));
  if (const char* env = std::getenv("TORCH_VKML_BATCH")) set_batch_size(uint32_t(atoi(env)));
}

Stream::~Stream() {
  try {
    release_hold();
    synchronize();
  } catch (...) {
  }
  // The semaphore and the pool (with its command buffers) destroy themselves.
}

void Stream::check_lost(VkResult r, const char* what) {
  if (r == VK_ERROR_DEVICE_LOST) device_.mark_lost();
  check_vk(int(r), what);
}

void Stream::begin_if_needed() {
  if (device_.lost())
    fail(ErrorKind::DeviceLost, "vkml device " + std::to_string(device_.index()) +
                                    " was lost (driver reset); restart the process");
  if (current_) return;
  if (!spare_.empty()) {
    current_ = spare_.back();
    spare_.pop_back();
  } else {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_.get();
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VKML_CHECK_VK(vk::vkAllocateCommandBuffers(device_.handle(), &ai, &current_));
  }
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VKML_CHECK_VK(vk::vkBeginCommandBuffer(current_, &bi));
  bound_ = VK_NULL_HANDLE;
  recorded_ = 0;
  recorded_workgroups_ = 0;
}

// A global memory barrier where the hazard tracker sees a dependency: cheaper
// to record than per-buffer barriers, and the only kind that covers memory
// reached through device addresses. While profiling, before every command, so that
// each one runs alone (profiler.h).
void Stream::barrier_for(const Access* access) {
  if (profiler_ || hazards_.needs_barrier(access)) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    // Write-after-read needs only the execution dependency the stages give.
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk::vkCmdPipelineBarrier(current_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    hazards_.fenced();
    ++total_barriers_;
  }
  hazards_.record(access);
  device_.value_bounds().written(access);
}

void Stream::dispatch(VkPipeline pipeline, const void* push, uint32_t push_size, uint32_t gx,
                      uint32_t gy, uint32_t gz, const Access* access) {
  if (gx == 0 || gy == 0 || gz == 0) return;
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  begin_if_needed();
  barrier_for(access);
  if (pipeline != bound_) {
    vk::vkCmdBindPipeline(current_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    bound_ = pipeline;
  }
  if (push_size)
    vk::vkCmdPushConstants(current_, device_.pipelines().layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           push_size, push);
  const uint32_t timed = profiler_ ? profiler_->before(current_, slot_) : 0;
  vk::vkCmdDispatch(current_, gx, gy, gz);
  if (profiler_) profiler_->after(current_, timed, pipeline, uint64_t(gx) * gy * gz);
  ++total_dispatches_;
  recorded_workgroups_ += uint64_t(gx) * gy * gz;
  if (++recorded_ >= batch_limit_ || recorded_workgroups_ >= kFlushWorkgroups) flush_locked();
}

void Stream::copy_buffer(VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset,
                         uint64_t size, const Access* access) {
  if (size == 0) return;
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  begin_if_needed();
  barrier_for(access);
  VkBufferCopy region{src_offset, dst_offset, size};
  const uint32_t timed = profiler_ ? profiler_->before(current_, slot_) : 0;
  vk::vkCmdCopyBuffer(current_, src, dst, 1, &region);
  if (profiler_) profiler_->after(current_, timed, VK_NULL_HANDLE, 0);
  if (++recorded_ >= batch_limit_) flush_locked();
}

uint64_t Stream::record_external(const char* label, const Access* access,
                                 const std::function<void(VkCommandBuffer)>& record) {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  begin_if_needed();
  barrier_for(access);
  const uint32_t timed = profiler_ ? profiler_->before(current_, slot_) : 0;
  record(current_);
  if (profiler_) profiler_->after(current_, timed, VK_NULL_HANDLE, 0, label);
  bound_ = VK_NULL_HANDLE;  // it bound pipelines of its own
  ++total_dispatches_;
  uint64_t done = submitted_value_ + 1;
  if (++recorded_ >= batch_limit_) flush_locked();
  return done;
}

void Stream::with_queue(const std::function<void(VkQueue)>& use) {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  std::lock_guard<std::mutex> queue_lock(device_.queue_mutex(queue_));
  use(device_.queue(queue_));
}

void Stream::release(const Deferred& d) {
  if (d.left && d.left->fetch_sub(1) != 1) return;  // another stream still uses it
  delete d.left;
  d.pool->free_finished(d.address);
}

void Stream::free_after_use(MemoryPool& pool, uint64_t address, std::atomic<int>* left) {
  record_deferred();  // held-back work may use it
  std::lock_guard<std::mutex> lock(mutex_);
  if (current_) {
    current_releases_.push_back({&pool, address, left});
  } else if (!in_flight_.empty()) {
    in_flight_.back().releases.push_back({&pool, address, left});
  } else {
    release({&pool, address, left});  // nothing recorded uses it any more
  }
}

void Stream::wait_for(Stream& other, uint64_t value) {
  if (&other == this) return;  // in order already
  if (other.completed_value() >= value) return;
  // Submitted first: a queue must never wait for a submission that comes after it.
  other.submit_through(value);
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();  // what was recorded before need not wait
  for (Wait& w : waits_) {
    if (w.timeline == other.timeline_.get()) {
      w.value = std::max(w.value, value);
      return;
    }
  }
  waits_.push_back({other.timeline_.get(), value});
}

void Stream::submit_through(uint64_t value) {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  if (value > submitted_value_) flush_locked();
}

void Stream::hold() {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();  // what was recorded before runs
  if (!hold_) {
    VkSemaphoreTypeCreateInfo ti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    si.pNext = &ti;
    hold_ = VkOwned<VkSemaphore>(device_.handle());
    VKML_CHECK_VK(vk::vkCreateSemaphore(device_.handle(), &si, nullptr, hold_.put()));
  }
  waits_.push_back({hold_.get(), ++hold_value_});
}

void Stream::release_hold() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!hold_) return;
  VkSemaphoreSignalInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  si.semaphore = hold_.get();
  si.value = hold_value_;
  uint64_t now = 0;
  VKML_CHECK_VK(vk::vkGetSemaphoreCounterValue(device_.handle(), hold_.get(), &now));
  if (now < hold_value_) VKML_CHECK_VK(vk::vkSignalSemaphore(device_.handle(), &si));
}

uint64_t Stream::recorded_value() {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  return current_ || !waits_.empty() ? submitted_value_ + 1 : submitted_value_;
}

uint64_t Stream::write_timestamp(VkQueryPool pool, uint32_t query) {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  begin_if_needed();
  // Reset in the command buffer, in queue order: no host reset feature needed, and a
  // slot re-recorded while an earlier write is still in flight stays well-ordered.
  vk::vkCmdResetQueryPool(current_, pool, query, 1);
  vk::vkCmdWriteTimestamp(current_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, query);
  return submitted_value_ + 1;
}

void Stream::set_profiler(Profiler* profiler) {
  record_deferred();  // held-back work belongs to the period before
  std::lock_guard<std::mutex> lock(mutex_);
  profiler_ = profiler;
}

uint64_t Stream::flush() {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  return flush_locked();
}

uint64_t Stream::flush_locked() {
  // A wait for another stream is submitted even with no work after it: whoever waits
  // for this stream's next value must find the other's work done too.
  if (!current_ && waits_.empty()) return submitted_value_;
  if (current_) {
    // Make every write visible to the host once the batch is complete.
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk::vkCmdPipelineBarrier(current_,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    VKML_CHECK_VK(vk::vkEndCommandBuffer(current_));
  }
  uint64_t value = submitted_value_ + 1;
  // Waits: every command of the batch starts after the other streams' values, whose
  // semaphore signals make their writes visible here.
  VkSemaphore wait_semaphores[Device::kStreamSlots];
  uint64_t wait_values[Device::kStreamSlots];
  VkPipelineStageFlags wait_stages[Device::kStreamSlots];
  const auto waits = uint32_t(waits_.size());
  for (uint32_t i = 0; i < waits; ++i) {
    wait_semaphores[i] = waits_[i].timeline;
    wait_values[i] = waits_[i].value;
    wait_stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  }
  waits_.clear();
  VkTimelineSemaphoreSubmitInfo ts{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ts.waitSemaphoreValueCount = waits;
  ts.pWaitSemaphoreValues = wait_values;
  ts.signalSemaphoreValueCount = 1;
  ts.pSignalSemaphoreValues = &value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &ts;
  si.waitSemaphoreCount = waits;
  si.pWaitSemaphores = wait_semaphores;
  si.pWaitDstStageMask = wait_stages;
  VkCommandBuffer cb = current_;
  current_ = VK_NULL_HANDLE;
  si.commandBufferCount = cb ? 1 : 0;
  si.pCommandBuffers = &cb;
  si.signalSemaphoreCount = 1;
  VkSemaphore timeline = timeline_.get();
  si.pSignalSemaphores = &timeline;
  {
    std::lock_guard<std::mutex> queue_lock(device_.queue_mutex(queue_));
    check_lost(vk::vkQueueSubmit(device_.queue(queue_), 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
  }
  submitted_value_ = value;
  ++total_submits_;
  batch_limit_ = batch_limit_ >= batch_size_ / 2 ? batch_size_ : batch_limit_ * 2;
  Batch& b = in_flight_.push_back();
  b.cb = cb;
  b.value = value;
  b.releases.swap(current_releases_);  // current_ takes the slot's emptied list
  // Recycle what already finished without waiting.
  uint64_t done = 0;
  if (vk::vkGetSemaphoreCounterValue(device_.handle(), timeline_.get(), &done) == VK_SUCCESS)
    retire(done);
  if (in_flight_.size() > kMaxInFlight) wait_locked(in_flight_.front().value);
  return value;
}

void Stream::retire(uint64_t completed) {
  if (completed > completed_value_) completed_value_ = completed;
  while (!in_flight_.empty() && in_flight_.front().value <= completed_value_) {
    Batch& b = in_flight_.front();
    if (b.cb) {
      vk::vkResetCommandBuffer(b.cb, 0);
      spare_.push_back(b.cb);
    }
    for (auto& d : b.releases) release(d);
    b.releases.clear();
    in_flight_.pop_front();
  }
}

void Stream::wait(uint64_t value) {
  record_deferred();
  std::unique_lock<std::mutex> lock(mutex_);
  if (value > submitted_value_) flush_locked();
  wait_locked(value);
  // All that was submitted has run: the GPU idles until the next submit.
  if (value >= submitted_value_) batch_limit_ = std::min(kFirstBatchAfterIdle, batch_size_);
}

void Stream::wait_for_timeline(uint64_t value) {
  VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wi.semaphoreCount = 1;
  VkSemaphore timeline = timeline_.get();
  wi.pSemaphores = &timeline;
  wi.pValues = &value;
  // Wait in slices so a lost device is reported instead of hanging forever.
  for (;;) {
    VkResult r = vk::vkWaitSemaphores(device_.handle(), &wi, 1000000000ull);
    if (r == VK_SUCCESS) break;
    if (r != VK_TIMEOUT) check_lost(r, "vkWaitSemaphores");
  }
}

void Stream::wait_locked(uint64_t value) {
  if (value <= completed_value_) return;
  ++total_syncs_;
  wait_for_timeline(value);
  retire(value);
}

void Stream::wait_in_background(uint64_t value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (value <= completed_value_) return;
    if (value > submitted_value_) flush_locked();
  }
  wait_for_timeline(value);
  std::lock_guard<std::mutex> lock(mutex_);
  retire(value);
}

size_t Stream::in_flight() {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.size();
}

void Stream::synchronize() {
  uint64_t v = flush();
  wait(v);
}

uint64_t Stream::completed_value() {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t done = 0;
  if (vk::vkGetSemaphoreCounterValue(device_.handle(), timeline_.get(), &done) == VK_SUCCESS)
    retire(done);
  return completed_value_;
}

}  // namespace vkml
