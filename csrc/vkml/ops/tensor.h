#pragma once
// What the operator library knows of a tensor: a device address, a dtype, and
// sizes/strides in elements. No ATen here; the adapter builds these.
#include <cstdint>
#include <vector>

#include "vkml/core/dtype.h"

namespace vkml {

constexpr int kMaxDims = 12;

struct TensorRef {
  uint64_t address = 0;  // device address of element [0, 0, ...]
  DType dtype = DType::f32;
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
  static TensorRef contiguous(uint64_t address, DType dtype, std::vector<int64_t> sizes) {
    TensorRef t;
    t.address = address;
    t.dtype = dtype;
    t.ndim = int(sizes.size());
    int64_t s = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      t.sizes[d] = sizes[d];
      t.strides[d] = s;
      s *= sizes[d];
    }
    return t;
  }
};

}  // namespace vkml
