#pragma once
// What the kernels of torchvision's ops (ops_detection.cpp, ops_deform_conv.cpp) share:
// the counted CPU route for inputs the device has no kernel for, and the device check.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <utility>

#include "fallback.h"

namespace vkml_aten {

// torchvision's op `name` on the CPU, through the counted fallback; its results.
template <class... Args>
torch::jit::Stack torchvision_on_cpu(const char* name, Args&&... args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
  torch::jit::Stack stack;
  torch::jit::push(stack, std::forward<Args>(args)...);
  cpu_fallback(op, &stack);
  return stack;
}

inline void check_same_device(const at::Tensor& a, const at::Tensor& b, const char* op) {
  TORCH_CHECK(a.device() == b.device(), op, ": expected all tensors on one device, got ",
              a.device(), " and ", b.device());
}

}  // namespace vkml_aten
