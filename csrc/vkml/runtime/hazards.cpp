#include "vkml/runtime/hazards.h"

namespace vkml {

HazardTracker::HazardTracker() {
  // Reserved once: clearing keeps the capacity, so recording never allocates.
  reads_.reserve(kLimit + Access::kMax);
  writes_.reserve(kLimit + Access::kMax);
}

bool HazardTracker::overlaps(const std::vector<Span>& set, const Span* spans, int n) {
  for (int i = 0; i < n; ++i)
    for (const Span& s : set)
      if (spans[i].begin < s.end && s.begin < spans[i].end) return true;
  return false;
}

bool HazardTracker::needs_barrier(const Access* a) const {
  if (!a || a->overflow || unknown_) return true;
  if (reads_.size() >= kLimit || writes_.size() >= kLimit) return true;
  return overlaps(writes_, a->reads, a->nreads) || overlaps(writes_, a->writes, a->nwrites) ||
         overlaps(reads_, a->writes, a->nwrites);
}

void HazardTracker::record(const Access* a) {
  if (!a || a->overflow) {
    unknown_ = true;
    return;
  }
  for (int i = 0; i < a->nreads; ++i) reads_.push_back(a->reads[i]);
  for (int i = 0; i < a->nwrites; ++i) writes_.push_back(a->writes[i]);
}

void HazardTracker::fenced() {
  reads_.clear();
  writes_.clear();
  unknown_ = false;
}

}  // namespace vkml
