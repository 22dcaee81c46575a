#pragma once
// A call site's own cache of pipelines, indexed by the few small values that
// select its kernel (dtype, op code, tile class): the site names their ranges
// once, and each call passes the values. After the first use of a combination,
// finding the pipeline is one atomic load: no lock, no hashing, no name strings
// on the per-op path. Declare one as a function-local static; every device has
// its own row of the table, so a value may also stand for a device-dependent
// choice (a workgroup size clamped to the device's limit).
#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>

#include "vkml/runtime/device.h"
#include "vkml/runtime/pipelines.h"

namespace vkml {

class PipelineSlots {
 public:
  static constexpr size_t kMaxDigits = 4;

  // One slot per combination of up to four values, value i in [0, ranges[i]).
  PipelineSlots(std::initializer_list<uint32_t> ranges) {
    uint64_t count = 1;
    for (uint32_t r : ranges) {
      if (n_ < kMaxDigits) ranges_[n_++] = r;
      count *= r;
    }
    count_ = ranges.size() <= kMaxDigits && count < Pipelines::kSlotCapacity ? uint32_t(count) : 0;
    base_ = Pipelines::reserve_slots(count_);
  }

  // `make` returns the pipeline for these values (through Pipelines::get); it
  // runs on their first use per device, and every time for values out of their
  // ranges. Two combinations may share a pipeline; one must never stand for two.
  template <class Make>
  VkPipeline get(Device& dev, std::initializer_list<uint32_t> values, Make&& make) const {
    std::atomic<VkPipeline>* s = slot(dev, values);
    if (!s) return make();
    VkPipeline p = s->load(std::memory_order_acquire);
    if (p == VK_NULL_HANDLE) {
      p = make();
      s->store(p, std::memory_order_release);
    }
    return p;
  }

 private:
  std::atomic<VkPipeline>* slot(Device& dev, std::initializer_list<uint32_t> values) const {
    if (values.size() != n_) return nullptr;
    uint32_t key = 0;
    size_t i = 0;
    for (uint32_t v : values) {
      if (v >= ranges_[i]) return nullptr;
      key = key * ranges_[i++] + v;
    }
    return key < count_ ? dev.pipelines().slot(base_ + key) : nullptr;
  }

  std::array<uint32_t, kMaxDigits> ranges_{};
  size_t n_ = 0;
  uint32_t count_ = 0, base_ = 0;
};

}  // namespace vkml
