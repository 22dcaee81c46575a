#pragma once
// Work a thread holds back to record later as one command (the multi-tensor
// elementwise batches of ops/elementwise_batch.h). Whatever else this thread
// records, submits, waits for or frees on any device records the held-back
// work first, so it keeps its place in program order.
namespace vkml {

class DeferredWork {
 public:
  // Records the held-back work; called with no Stream lock held.
  virtual void record_now() = 0;

 protected:
  ~DeferredWork() = default;
};

// This thread's held-back work (nullptr: none).
void set_deferred(DeferredWork* work);
DeferredWork*& deferred_slot();

// Records this thread's held-back work, if any.
inline void record_deferred() {
  DeferredWork*& slot = deferred_slot();
  if (DeferredWork* w = slot) {
    slot = nullptr;  // recording it must not recurse
    w->record_now();
  }
}

}  // namespace vkml
