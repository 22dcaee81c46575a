#pragma once
// Collapsing the dims of several operands that iterate together: a dim pair
// merges when every operand steps through it as one, size-1 dims vanish.
// Everything here is innermost-dim-first.
#include <cstdint>

#include "vkml/ops/tensor.h"

namespace vkml::ops {

struct MultiLayout {
  int ndim = 0;
  int noperands = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[4][kMaxDims] = {};

  void coalesce();
  int64_t numel() const;
  bool all_contiguous() const;  // after coalesce: one dim, unit strides
  // Largest element offset operand k reaches (for 32-bit index checks).
  int64_t max_offset(int k) const;
};

// A TensorRef's dims (outermost first) as an innermost-first layout slot.
void set_operand_from(MultiLayout& l, int k, const TensorRef& t);

}  // namespace vkml::ops
