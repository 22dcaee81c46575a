#pragma once
// The adapter's view of the core: at::Tensor -> vkml::TensorRef, dtype
// mapping, the device of a tensor, and core errors turned into torch errors.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "vkml/core/error.h"
#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/runtime.h"

namespace vkml_aten {

// false for dtypes the core has no kernels for (complex, quantized, ...).
bool has_vkml_dtype(at::ScalarType t);

// Complex tensors are stored as pairs of their real dtype (at::view_as_real): what moves
// elements (copies, fills, cat) works on that view; the rest takes the CPU fallback.
inline bool is_complex_storage(at::ScalarType t) {
  return t == at::kComplexFloat || t == at::kComplexDouble;
}

// uint16, uint32 and uint64, PyTorch's "barebones" unsigned dtypes, which CUDA holds with
// few ops: stored as the signed dtype of their width; copies and fills move those bits,
// conversions go through a wider signed dtype (ops_copy.cpp); other ops raise.
inline bool is_unsigned_storage(at::ScalarType t) {
  return t == at::kUInt16 || t == at::kUInt32 || t == at::kUInt64;
}

// What a vkml tensor may hold.
inline bool can_hold(at::ScalarType t) {
  return has_vkml_dtype(t) || is_complex_storage(t) || is_unsigned_storage(t);
}

// NotImplementedError naming op, for a dtype the core has no kernels for.
inline void check_vkml_dtype(const char* op, const at::Tensor& t) {
  TORCH_CHECK_NOT_IMPLEMENTED(has_vkml_dtype(t.scalar_type()), op, " on vkml: unsupported dtype ",
                              t.scalar_type());
}
vkml::DType to_vkml(at::ScalarType t);
inline vkml::DType to_vkml(const at::Tensor& t) { return to_vkml(t.scalar_type()); }

// The dtypes of the float-only kernels (conv, pool, norm, resampling, ...):
// stored as 32 or 16 bits, computed in fp32.
inline bool is_float_storage(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

// The logical device of a vkml tensor (or of an index; -1 = current).
vkml::Device& vkml_device(const at::Tensor& t);
vkml::Device& device_at(c10::DeviceIndex index);

vkml::TensorRef ref(const at::Tensor& t);

// Raises PyTorch's device-mismatch error for t, an operand of a vkml kernel on another
// device (a CPU target or index): ops registered by hand get no dispatcher check.
[[noreturn]] void raise_not_on_vkml(const at::Tensor& t);

// The device address of a vkml tensor's data. Another device's pointer must never reach
// a kernel: on a GPU it faults, on lavapipe it reads host memory as if it were the data.
inline uint64_t addr(const at::Tensor& t) {
  if (C10_UNLIKELY(t.device().type() != c10::DeviceType::PrivateUse1)) raise_not_on_vkml(t);
  return reinterpret_cast<uint64_t>(t.data_ptr());
}

// Rethrows a core error as the matching torch exception (ValueError,
// OutOfMemoryError, RuntimeError).
[[noreturn]] void rethrow(const vkml::Error& e);

// Runs f, translating core errors.
template <class F>
decltype(auto) guarded(F&& f) {
  try {
    return f();
  } catch (const vkml::Error& e) {
    rethrow(e);
  }
}

// The vkml current device of this thread (shared with the device guard).
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);
// The vkml::Device stream slot a c10 stream id of the device runs on (guard.cpp).
int stream_slot(c10::StreamId id);
// The vkml stream a c10 stream (of a vkml device; index -1: the current device) names.
vkml::Stream& stream_of(const c10::Stream& s);

}  // namespace vkml_aten
