#pragma once
// float64 values as int64 keys in the same order, for the kernels that sort and search
// (ops_sort.cpp, ops_search.cpp): their keys are float32 or int64.
#include <ATen/ATen.h>

namespace vkml_aten {

// The bits, with a negative value's magnitude bits flipped. -0.0 becomes +0.0 and every
// NaN the positive quiet one first, so zeros tie and NaNs come last, as on the CPU.
at::Tensor f64_keys(const at::Tensor& x);

// The float64 values of keys made by f64_keys (-0.0 and NaN payloads aside).
at::Tensor f64_from_keys(const at::Tensor& keys);

}  // namespace vkml_aten
