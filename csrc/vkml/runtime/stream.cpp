#include "vkml/runtime/stream.h"

#include "vkml/runtime/deferred.h"

#include <algorithm>
#include <cstdlib>

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/memory.h"
#include "vkml/runtime/profiler.h"

namespace vkml {

Stream::Stream(Device& device) : device_(device) {
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
  if (profiler_) profiler_->before(current_);
  vk::vkCmdDispatch(current_, gx, gy, gz);
  if (profiler_) profiler_->after(current_, pipeline, uint64_t(gx) * gy * gz);
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
  if (profiler_) profiler_->before(current_);
  vk::vkCmdCopyBuffer(current_, src, dst, 1, &region);
  if (profiler_) profiler_->after(current_, VK_NULL_HANDLE, 0);
  if (++recorded_ >= batch_limit_) flush_locked();
}

uint64_t Stream::record_external(const char* label, const Access* access,
                                 const std::function<void(VkCommandBuffer)>& record) {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  begin_if_needed();
  barrier_for(access);
  if (profiler_) profiler_->before(current_);
  record(current_);
  if (profiler_) profiler_->after(current_, VK_NULL_HANDLE, 0, label);
  bound_ = VK_NULL_HANDLE;  // it bound pipelines of its own
  ++total_dispatches_;
  uint64_t done = submitted_value_ + 1;
  if (++recorded_ >= batch_limit_) flush_locked();
  return done;
}

void Stream::with_queue(const std::function<void(VkQueue)>& use) {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  use(device_.queue());
}

void Stream::free_after_use(MemoryPool& pool, uint64_t address) {
  record_deferred();  // held-back work may use it
  std::lock_guard<std::mutex> lock(mutex_);
  if (current_) {
    current_releases_.push_back({&pool, address});
  } else if (!in_flight_.empty()) {
    in_flight_.back().releases.push_back({&pool, address});
  } else {
    pool.free_finished(address);  // nothing recorded uses it any more
  }
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
  if (!current_) return submitted_value_;
  // Make every write visible to the host once the batch is complete.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vk::vkCmdPipelineBarrier(current_,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  VKML_CHECK_VK(vk::vkEndCommandBuffer(current_));
  uint64_t value = submitted_value_ + 1;
  VkTimelineSemaphoreSubmitInfo ts{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ts.signalSemaphoreValueCount = 1;
  ts.pSignalSemaphoreValues = &value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &ts;
  VkCommandBuffer cb = current_;
  current_ = VK_NULL_HANDLE;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  si.signalSemaphoreCount = 1;
  VkSemaphore timeline = timeline_.get();
  si.pSignalSemaphores = &timeline;
  check_lost(vk::vkQueueSubmit(device_.queue(), 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
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
    vk::vkResetCommandBuffer(b.cb, 0);
    spare_.push_back(b.cb);
    for (auto& d : b.releases) d.pool->free_finished(d.address);
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
