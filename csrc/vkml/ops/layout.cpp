#include "vkml/ops/layout.h"

namespace vkml::ops {

void MultiLayout::coalesce() {
  int out = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    if (out > 0) {
      bool mergeable = true;
      for (int k = 0; k < noperands; ++k)
        if (strides[k][d] != strides[k][out - 1] * sizes[out - 1]) mergeable = false;
      if (mergeable) {
        sizes[out - 1] *= sizes[d];
        continue;
      }
    }
    sizes[out] = sizes[d];
    for (int k = 0; k < noperands; ++k) strides[k][out] = strides[k][d];
    ++out;
  }
  if (out == 0) {  // a single element
    sizes[0] = 1;
    for (int k = 0; k < noperands; ++k) strides[k][0] = 1;
    out = 1;
  }
  ndim = out;
}

int64_t MultiLayout::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= sizes[d];
  return n;
}

bool MultiLayout::all_contiguous() const {
  if (ndim != 1) return false;
  for (int k = 0; k < noperands; ++k)
    if (strides[k][0] != 1) return false;
  return true;
}

int64_t MultiLayout::max_offset(int k) const {
  int64_t m = 0;
  for (int d = 0; d < ndim; ++d) m += (sizes[d] - 1) * (strides[k][d] < 0 ? 0 : strides[k][d]);
  return m;
}

void set_operand_from(MultiLayout& l, int k, const TensorRef& t) {
  l.ndim = t.ndim;
  for (int d = 0; d < t.ndim; ++d) {
    l.sizes[d] = t.sizes[t.ndim - 1 - d];
    l.strides[k][d] = t.strides[t.ndim - 1 - d];
  }
}

}  // namespace vkml::ops
