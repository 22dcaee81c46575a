#pragma once
// What some integer tensors on the device are known to hold, so that index
// bounds checks need not read values back (a host sync that lets the GPU run
// dry). Bounds are noted where the host knows the values without looking: an
// upload (the host had the data), fills, arange, randint, argmax, sort indices,
// copies, gathers and cats of known values (the adapter's value_bounds.h), and
// integer elementwise results (ops/elementwise_range.h). They
// describe bytes, not tensors: every command the stream records drops the
// bounds of the memory it declares it writes, and a command that declares
// nothing drops them all, so a noted range holds until something could have
// changed it. Fresh Vulkan memory drops them too, as it may reuse a freed
// block's addresses.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "vkml/core/dtype.h"
#include "vkml/runtime/hazards.h"

namespace vkml {

struct IntRange {
  int64_t lo = 0;
  int64_t hi = 0;  // inclusive
};

// The smallest range holding both.
inline IntRange join(IntRange a, IntRange b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

class ValueBounds {
 public:
  // Every `dtype` element in `bytes` (densely packed) lies in `range`.
  void note(Span bytes, DType dtype, IntRange range);
  // The range of the `dtype` elements that lie in `bytes`, if one noted range
  // covers them on its element boundaries. Records this thread's held-back
  // work first, so that a write issued earlier has dropped what it changes.
  std::optional<IntRange> lookup(Span bytes, DType dtype);
  // For the stream, as it records a command (nullptr: an undeclared one).
  void written(const Access* access);
  void forget(Span bytes);
  size_t size();

  static constexpr size_t kMaxEntries = 32;

 private:
  struct Entry {
    Span bytes;
    DType dtype;
    IntRange range;
  };
  void forget_locked(Span bytes);

  std::mutex mutex_;
  std::vector<Entry> entries_;    // oldest first
  std::atomic<size_t> count_{0};  // read without the lock on the per-command path
};

}  // namespace vkml
