#pragma once
// A call site's own cache of pipelines, indexed by a small key the site
// computes from what selects its kernel (dtype, op code, tile shape). After
// the first use of a key, finding the pipeline is one atomic load: no lock,
// no hashing, no name strings on the per-op path. Declare one as a
// function-local static; every device has its own row of the table, so keys
// may also stand for device-dependent choices (a workgroup size clamped to
// the device's limit).
#include <atomic>
#include <cstdint>

#include "vkml/runtime/device.h"
#include "vkml/runtime/pipelines.h"

namespace vkml {

class PipelineSlots {
 public:
  explicit PipelineSlots(uint32_t count) : base_(Pipelines::reserve_slots(count)), count_(count) {}

  // `make` returns the pipeline for `key` (through Pipelines::get); it runs
  // on the first use of the key per device, and every time for a key out of
  // range. Two keys may share a pipeline; one key must never stand for two.
  template <class Make>
  VkPipeline get(Device& dev, uint32_t key, Make&& make) const {
    std::atomic<VkPipeline>* s = key < count_ ? dev.pipelines().slot(base_ + key) : nullptr;
    if (!s) return make();
    VkPipeline p = s->load(std::memory_order_acquire);
    if (p == VK_NULL_HANDLE) {
      p = make();
      s->store(p, std::memory_order_release);
    }
    return p;
  }

 private:
  uint32_t base_, count_;
};

}  // namespace vkml
