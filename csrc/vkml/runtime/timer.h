#pragma once
// Device-clock timing: timestamps written by the GPU into a query pool, in the
// order of the stream, like CUDA events with timing. A slot is written when
// all work recorded before it has finished, so the difference of two slots is
// the device time of the work between them (including idle gaps in between,
// as with CUDA events).
#include <cstdint>
#include <mutex>
#include <vector>

#include "vkml/runtime/vk_api.h"
#include "vkml/runtime/vk_owned.h"

namespace vkml {

class Device;
class Stream;

class Timer {
 public:
  explicit Timer(Device& device);
  ~Timer();
  Timer(const Timer&) = delete;

  // False when the compute queue has no timestamps (timestampValidBits == 0);
  // every other call then throws InvalidArgument.
  bool supported() const { return valid_bits_ != 0; }
  double period_ns() const { return period_ns_; }
  // The tick bits that count (timestampValidBits); a difference wraps within them.
  uint64_t tick_mask() const { return valid_bits_ >= 64 ? ~0ull : (1ull << valid_bits_) - 1; }
  // A timestamp query pool of `count` queries on this device (the Profiler's too); the
  // caller destroys it.
  VkOwned<VkQueryPool> create_pool(uint32_t count);

  // A slot of the query pool, owned by the caller until release().
  uint32_t acquire();
  void release(uint32_t slot);

  // Writes the device clock into `slot` after all work recorded so far on `stream`
  // (the calling thread's current one without). Returns that stream's timeline value
  // after which it can be read.
  uint64_t record(uint32_t slot);
  uint64_t record(uint32_t slot, Stream& stream);
  // Whether the timestamp recorded in `slot` has been written (never blocks).
  bool ready(uint32_t slot);
  // Blocks until it has been written; returns the raw tick count.
  uint64_t ticks(uint32_t slot);
  // Device time from `start` to `end` in nanoseconds (blocks until both are written).
  double elapsed_ns(uint32_t start, uint32_t end);

  // One reading of the device clock (ticks) and CLOCK_MONOTONIC (ns) taken together,
  // within `deviation_ns` of each other (VK_EXT_calibrated_timestamps); false where the
  // device has no calibrated timestamps or the driver fails the call.
  struct Calibration {
    uint64_t ticks = 0;
    uint64_t monotonic_ns = 0;
    uint64_t deviation_ns = 0;
  };
  bool calibrate(Calibration* out);

 private:
  void check(uint32_t slot) const;  // mutex held
  void grow();                      // mutex held

  Device& device_;
  std::mutex mutex_;
  uint32_t valid_bits_ = 0;
  double period_ns_ = 1.0;
  // Pools of kSlotsPerPool queries each; slot = pool * kSlotsPerPool + query.
  std::vector<VkOwned<VkQueryPool>> pools_;
  std::vector<uint32_t> free_;
  std::vector<uint64_t> recorded_at_;  // per slot: timeline value, 0 = never recorded
  std::vector<Stream*> recorded_on_;   // per slot: the stream it was recorded on
};

}  // namespace vkml
