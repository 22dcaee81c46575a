#pragma once
// Small pieces many op files share: writing an out= argument, dtype checks.
#include <ATen/ATen.h>

namespace vkml_aten {

// out= semantics: resizes `out` (warning as ATen does when a non-empty out changes
// shape) and copies `r` into it, converting dtype and layout.
at::Tensor& write_out(at::Tensor& out, const at::Tensor& r);

// Raises NotImplementedError naming `op` unless `t` is float32, float16 or bfloat16,
// the storage dtypes of the float-only kernels.
void check_float_storage(const char* op, at::ScalarType t);

}  // namespace vkml_aten
