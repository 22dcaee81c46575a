#pragma once
// The ranks' agreement on each collective of vkml_gloo (distributed.cpp): the same name,
// dtypes and shapes everywhere, checked before Gloo sees buffers of different sizes (which
// aborts the process from Gloo's I/O thread).
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <functional>
#include <vector>

namespace vkml_aten::distributed {

// A function the issuer thread runs before the collective: one all_reduce of two integers
// over `inner`, raising on every rank where the ranks' calls differ. Empty where
// TORCH_VKML_DIST_CHECK=0.
std::function<void()> agreement(const c10::intrusive_ptr<c10d::Backend>& inner, const char* op,
                                const std::vector<at::Tensor>& tensors);

}  // namespace vkml_aten::distributed
