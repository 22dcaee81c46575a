#include "vkml/runtime/value_bounds.h"

#include <algorithm>

#include "vkml/runtime/deferred.h"

namespace vkml {

void ValueBounds::note(Span bytes, DType dtype, IntRange range) {
  if (bytes.end <= bytes.begin) return;
  std::lock_guard<std::mutex> lock(mutex_);
  forget_locked(bytes);
  if (entries_.size() >= kMaxEntries) entries_.erase(entries_.begin());
  entries_.push_back(Entry{bytes, dtype, range});
  count_.store(entries_.size(), std::memory_order_relaxed);
}

std::optional<IntRange> ValueBounds::lookup(Span bytes, DType dtype) {
  record_deferred();
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t size = itemsize(dtype);
  for (const Entry& e : entries_) {
    if (e.dtype != dtype || bytes.begin < e.bytes.begin || bytes.end > e.bytes.end) continue;
    // Elements straddling the noted ones would be other values.
    if ((bytes.begin - e.bytes.begin) % size != 0) continue;
    return e.range;
  }
  return std::nullopt;
}

void ValueBounds::written(const Access* a) {
  if (count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!a || a->overflow) {
    entries_.clear();
  } else {
    for (int i = 0; i < a->nwrites; ++i) forget_locked(a->writes[i]);
    for (size_t i = 0; i < a->n_more_writes; ++i) forget_locked(a->more_writes[i]);
  }
  count_.store(entries_.size(), std::memory_order_relaxed);
}

void ValueBounds::forget(Span bytes) {
  if (count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  forget_locked(bytes);
  count_.store(entries_.size(), std::memory_order_relaxed);
}

void ValueBounds::forget_locked(Span bytes) {
  std::erase_if(entries_, [&](const Entry& e) { return overlaps(e.bytes, bytes); });
}

size_t ValueBounds::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace vkml
