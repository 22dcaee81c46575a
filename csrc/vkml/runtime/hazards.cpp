#include "vkml/runtime/hazards.h"

namespace vkml {

HazardTracker::HazardTracker() {
  // Reserved once: clearing keeps the capacity, so recording never allocates.
  reads_.reserve(kLimit + Access::kMax);
  writes_.reserve(kLimit + Access::kMax);
}

bool HazardTracker::overlaps(const std::vector<Span>& set, const Span* spans, size_t n) {
  for (size_t i = 0; i < n; ++i)
    for (const Span& s : set)
      if (vkml::overlaps(spans[i], s)) return true;
  return false;
}

bool HazardTracker::needs_barrier(const Access* a) const {
  if (!a || a->overflow || unknown_) return true;
  if (reads_.size() >= kLimit || writes_.size() >= kLimit) return true;
  if (a->n_more_reads + a->n_more_writes > kMaxCompared) return true;
  const auto nr = size_t(a->nreads), nw = size_t(a->nwrites);
  return overlaps(writes_, a->reads, nr) || overlaps(writes_, a->writes, nw) ||
         overlaps(reads_, a->writes, nw) || overlaps(writes_, a->more_reads, a->n_more_reads) ||
         overlaps(writes_, a->more_writes, a->n_more_writes) ||
         overlaps(reads_, a->more_writes, a->n_more_writes);
}

void HazardTracker::record(const Access* a) {
  // Past the reserved capacity the spans are not kept (no allocation): the
  // next command is fenced instead.
  if (!a || a->overflow ||
      reads_.size() + size_t(a->nreads) + a->n_more_reads > reads_.capacity() ||
      writes_.size() + size_t(a->nwrites) + a->n_more_writes > writes_.capacity()) {
    unknown_ = true;
    return;
  }
  for (int i = 0; i < a->nreads; ++i) reads_.push_back(a->reads[i]);
  for (int i = 0; i < a->nwrites; ++i) writes_.push_back(a->writes[i]);
  for (size_t i = 0; i < a->n_more_reads; ++i) reads_.push_back(a->more_reads[i]);
  for (size_t i = 0; i < a->n_more_writes; ++i) writes_.push_back(a->more_writes[i]);
}

void HazardTracker::fenced() {
  reads_.clear();
  writes_.clear();
  unknown_ = false;
}

}  // namespace vkml
