#include "vkml/ops/elementwise_batch.h"

#include <exception>
#include <vector>

#include "vkml/ops/copy.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/deferred.h"
#include "vkml/shaders/elementwise_push.h"
#include "vkml/shaders/op_codes.h"

namespace vkml::ops {

namespace {

using Record = elementwise_detail::TableRecord;

constexpr uint64_t kGroupElements = ELEMENTWISE_WG * 4;  // 4 elements a thread
constexpr size_t kMaxRecords = 4096;

bool overlaps_any(const Span& s, const std::vector<Span>& set) {
  for (const Span& t : set)
    if (overlaps(s, t)) return true;
  return false;
}

class Batch final : public DeferredWork {
 public:
  int depth = 0;

  void record_now() override { send(); }

  void hold(const HeldLaunch& l) {
    if (!records_.empty() && (dev_ != l.dev || pipeline_ != l.pipeline || flags_ != l.flags))
      send();
    const Span write = span_elems(l.ptr[0], l.numel, l.itemsize);
    Span reads[3];
    int nreads = 0;
    for (int k = 1; k <= l.ninputs; ++k) {
      if (l.flags & (EW_SCALAR0 << (k - 1))) continue;
      const bool splat = l.splat & (1u << (k - 1));
      reads[nreads++] = span_elems(l.ptr[k], splat ? 1 : l.numel, l.itemsize);
    }
    bool conflict = overlaps_any(write, writes_) || overlaps_any(write, reads_);
    for (int i = 0; i < nreads && !conflict; ++i) conflict = overlaps_any(reads[i], writes_);
    const uint64_t groups = (l.numel + kGroupElements - 1) / kGroupElements;
    if (conflict || records_.size() >= kMaxRecords || groups_ + groups >= (uint64_t(1) << 31))
      send();

    Record r{};
    for (int k = 0; k < 4; ++k) r.ptr[k] = l.ptr[k];
    for (int k = 0; k < 3; ++k) r.s[k] = l.s[k];
    r.first_group = uint32_t(groups_);
    r.numel = l.numel;
    r.splat = l.splat;
    r.aligned4 = l.aligned4 ? 1 : 0;
    records_.push_back(r);
    writes_.push_back(write);
    reads_.insert(reads_.end(), reads, reads + nreads);
    groups_ += groups;
    dev_ = l.dev;
    pipeline_ = l.pipeline;
    flags_ = l.flags;
    set_deferred(this);
  }

  // Dispatches what is held back as one table.
  void send() {
    if (deferred_slot() == this) set_deferred(nullptr);
    if (records_.empty()) return;
    std::vector<Record> records;
    std::vector<Span> writes, reads;
    records.swap(records_);
    writes.swap(writes_);
    reads.swap(reads_);
    const uint64_t groups = groups_;
    groups_ = 0;
    Device& dev = *dev_;
    const KernelTable table =
        put_kernel_table(dev, records.data(), records.size() * sizeof(Record), groups, reads);
    elementwise_detail::Push p{};
    p.ptr[0] = table.address;
    p.numel = uint32_t(records.size());
    p.size[0] = int32_t(groups);
    p.flags = flags_;
    const Access access = Access::of_lists(reads, writes);
    dispatch_groups(dev, pipeline_, &p, sizeof(p), groups, &access);
    release_kernel_table(dev, table);
  }

 private:
  std::vector<Record> records_;
  std::vector<Span> writes_, reads_;
  uint64_t groups_ = 0;
  Device* dev_ = nullptr;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  uint32_t flags_ = 0;
};

Batch& batch() {
  thread_local Batch b;
  return b;
}

}  // namespace

ElementwiseBatchScope::ElementwiseBatchScope() { ++batch().depth; }

void ElementwiseBatchScope::close() {
  if (!open_) return;
  open_ = false;
  Batch& b = batch();
  if (--b.depth == 0) b.send();
}

ElementwiseBatchScope::~ElementwiseBatchScope() {
  if (!open_) return;
  // Unwinding from an error: still send what the op recorded so far, as the
  // one-by-one path would have; a second error cannot be raised from here.
  try {
    close();
  } catch (const std::exception&) {
  }
}

bool batching() { return batch().depth > 0; }

bool hold_back(const HeldLaunch& launch) {
  Batch& b = batch();
  if (b.depth == 0) return false;
  b.hold(launch);
  return true;
}

}  // namespace vkml::ops
