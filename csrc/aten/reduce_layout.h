#pragma once
// Bringing a tensor into the [outer, r, inner] layout the reduction-style
// kernels take (reductions, softmax): without a copy when the reduced dims
// are one contiguous block of a contiguous tensor, else through a permuted copy.
#include <ATen/ATen.h>

#include <vector>

namespace vkml_aten {

struct ReduceLayout {
  at::Tensor input;  // contiguous; [outer, r, inner] in memory
  int64_t outer = 1, r = 1, inner = 1;
  std::vector<int64_t> kept_sizes;  // sizes of the dims not reduced, in order
};

// dims: the dims to reduce (already wrapped, unique); empty means all.
ReduceLayout reduce_layout(const at::Tensor& self, std::vector<int64_t> dims);

// The output shape for keepdim / not.
std::vector<int64_t> reduced_shape(const at::Tensor& self, const std::vector<int64_t>& dims,
                                   bool keepdim);

// Wraps and sorts an optional dim list (empty / none = all dims).
std::vector<int64_t> reduce_dims(const at::Tensor& self, at::OptionalIntArrayRef dims);

}  // namespace vkml_aten
