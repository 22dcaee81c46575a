#pragma once
// The CPU fallback for aten ops without a vkml kernel.
#include <ATen/core/dispatch/Dispatcher.h>

#include <map>
#include <string>

namespace vkml_aten {

// Boxed: copies inputs to the CPU, runs the op there, copies results (and
// in-place / out= arguments) back. Counts each call and, per
// TORCH_VKML_FALLBACK (warn | silent | error), warns once per op or raises
// NotImplementedError.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace vkml_aten
