#pragma once
// Multi-tensor elementwise ops in one dispatch. While a scope is open on a
// thread, the elementwise kernels it runs over contiguous float tensors are
// held back as records of a table; consecutive records of one kernel go out as
// one dispatch of its *_table variant (shaders/elementwise.comp). The adapter opens a scope
// around each _foreach_* op, whose reference loop runs one elementwise op per
// tensor: the loop keeps ATen's semantics (type promotion, scalar lists), and
// the GPU gets one dispatch per list instead of one per tensor.
//
// A record is held back only while it is independent of the others: one that
// writes what an earlier one reads or writes, or reads what one writes, sends
// the table first. Anything else this thread records, waits for or frees sends
// it too (runtime/deferred.h), so program order holds.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

class ElementwiseBatchScope {
 public:
  ElementwiseBatchScope();
  // Sends what is held back (may throw); the destructor sends it otherwise.
  void close();
  ~ElementwiseBatchScope();
  ElementwiseBatchScope(const ElementwiseBatchScope&) = delete;
  ElementwiseBatchScope& operator=(const ElementwiseBatchScope&) = delete;

 private:
  bool open_ = true;
};

// One contiguous elementwise launch (elementwise.cpp): operand k of the
// kernel at ptr[k], `numel` elements each, or one element (bit k-1 of splat,
// inputs only), or a value in s (EW_SCALAR* flags).
struct HeldLaunch {
  Device* dev;
  VkPipeline pipeline;  // the kernel's *_table variant
  uint32_t flags;       // without EW_CONTIGUOUS / EW_VEC4
  int ninputs;
  size_t itemsize;
  uint64_t ptr[4];
  uint64_t s[3];
  uint32_t numel;
  uint32_t splat;
  bool aligned4;
};

// Whether a scope is open on this thread.
bool batching();
// Takes the launch into this thread's open batch; false when no scope is open.
bool hold_back(const HeldLaunch& launch);

}  // namespace vkml::ops
