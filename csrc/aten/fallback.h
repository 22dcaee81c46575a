#pragma once
// The CPU fallback for aten ops without a vkml kernel.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>

#include <map>
#include <string>

namespace vkml_aten {

// Boxed: copies inputs to the CPU, runs the op there, copies results (and
// in-place / out= arguments) back. Counts each call and, per
// TORCH_VKML_FALLBACK (warn | silent | error), warns once per op or raises
// NotImplementedError. Under torch_vkml.set_sync_debug_mode("error") a call with vkml
// arguments raises RuntimeError naming the op (its copies to the CPU would wait).
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Runs the aten op Op (at::_ops::name) through the counted CPU fallback from
// inside a native kernel, for inputs the device has no kernel for (float64
// transcendental functions, float64 softmax).
template <class Op, class... Args>
decltype(auto) cpu_route(Args&&... args) {
  return at::native::call_fallback_fn<&cpu_fallback, Op>::call(std::forward<Args>(args)...);
}

std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace vkml_aten
