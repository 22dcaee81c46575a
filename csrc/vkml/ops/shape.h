#pragma once
// Data movement with a kernel of its own: concatenation in one dispatch, and
// tril / triu. Elements move by size, so every dtype works.
#include <cstdint>
#include <vector>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// One input of cat, seen as [outer, size, inner] with element strides.
struct CatInput {
  uint64_t address = 0;
  int64_t size = 0;  // along the cat dim
  int64_t stride_outer = 0, stride_dim = 0, stride_inner = 0;
};

// dst: contiguous [outer, sum(size), inner] of `dtype`; every input has that dtype.
void cat(Device& dev, DType dtype, uint64_t dst, const std::vector<CatInput>& inputs, int64_t outer,
         int64_t inner);

// A [batch, rows, cols] view: address of element 0 and element strides.
struct MatrixRef {
  uint64_t address = 0;
  int64_t stride[3] = {0, 0, 0};
};

// dst = tril(src, k) (upper: triu); dst may equal src.
void tri(Device& dev, DType dtype, MatrixRef dst, MatrixRef src, int64_t batch, int64_t rows,
         int64_t cols, int64_t k, bool upper);

// repeat_interleave's index tensor: dst[j] = i for the `repeats[i]` consecutive j of
// each i. repeats: [n] int64 (or int32 when i32; also dst's dtype), non-negative,
// summing to total (checked by the caller). cum: uint32 [n] scratch.
void repeat_index(Device& dev, uint64_t repeats, uint64_t cum, uint64_t dst, int64_t n,
                  int64_t total, bool i32);

}  // namespace vkml::ops
