#pragma once
// Small pieces many op files share: writing an out= argument, dtype checks, the walk of a
// line by one thread.
#include <ATen/ATen.h>

namespace vkml_aten {

// out= semantics: resizes `out` (warning as ATen does when a non-empty out changes
// shape) and copies `r` into it, converting dtype and layout.
at::Tensor& write_out(at::Tensor& out, const at::Tensor& r);

// Raises NotImplementedError naming `op` unless `t` is float32, float16 or bfloat16,
// the storage dtypes of the float-only kernels.
void check_float_storage(const char* op, at::ScalarType t);

// Whether kernels that give a line along dim d of t to one thread when elements follow it
// (scan, softmax) would loop past the device's loop iteration limit, walking it
// `passes` times (DeviceInfo::loop_iteration_limit: Mesa 22.3's lavapipe stops such
// loops short, silently). Callers then move d last, where long rows get workgroups.
bool line_walk_too_long(const at::Tensor& t, int64_t d, int passes);

}  // namespace vkml_aten
