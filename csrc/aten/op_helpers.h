#pragma once
// Small pieces many op files share: writing an out= argument, a value check raised later,
// dtype checks, the walk of a line by one thread.
#include <ATen/ATen.h>
#include <torch/version.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

// An op given a bool tensor it does not take (negation, hardtanh): torch 2.14 raises
// NotImplementedError there, earlier releases RuntimeError; vkml raises as the installed
// torch does.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
#define VKML_CHECK_NOT_BOOL(cond, ...) TORCH_CHECK_NOT_IMPLEMENTED(cond, __VA_ARGS__)
#else
#define VKML_CHECK_NOT_BOOL(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#endif

namespace vkml_aten {

// Whether an optional tensor argument (a weight, a bias, running statistics) was given:
// present and defined, as ATen's schemas pass "None" either way.
inline bool given(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// out= semantics: resizes `out` (warning as ATen does when a non-empty out changes
// shape) and copies `r` into it, converting dtype and layout. `out` must be a vkml tensor:
// no kernel of PyTorch's writes a device result into a tensor on another device.
at::Tensor& write_out(at::Tensor& out, const at::Tensor& r);

// The checks ATen's structured kernels make on an out= tensor: the result's dtype exactly
// (no cast), and a vkml device. write_out_exact is write_out after them, for the ops whose
// CPU kernels make them (gather, scatter, softmax, argmax, the factorizations, ...).
void check_out(const at::Tensor& out, at::ScalarType dtype);
void check_out_device(const at::Tensor& out);
at::Tensor& write_out_exact(at::Tensor& out, const at::Tensor& r);

// In place (`out` is one of `inputs`) the output keeps its shape: the CPU's iterator
// raises where the broadcast `shape` differs (a.add_(b) with b broadcasting a).
void check_in_place_shape(at::ArrayRef<at::Tensor> inputs, const at::Tensor& out,
                          at::IntArrayRef shape);

// write_out for the ops whose CPU kernels cast into out only where no value is lost
// (c10::canCast: float into double, not into an integer): std, var, addr, cholesky, ...
at::Tensor& write_out_castable(at::Tensor& out, const at::Tensor& r);
void check_out_castable(const at::Tensor& out, at::ScalarType dtype);

// Checks on the device that every value of the integer tensor `values` lies in [lo, hi];
// one that does not raises RuntimeError(message) at the host's next read of the device
// (no wait here).
void check_range_later(const at::Tensor& values, int64_t lo, int64_t hi,
                       const std::string& message);

// Raises as PyTorch's CPU kernels do (RuntimeError "value cannot be converted to type
// ... without overflow") when an op's scalar argument (a fill value, a clamp bound,
// alpha) does not fit the dtype `t` it is used in, where the CPU converts it with
// Scalar::to<T>(): a kernel would wrap or overflow it silently.
void check_scalar_fits(const at::Scalar& s, at::ScalarType t);

// The n_rows x dense.size(1) product of a sparse matrix given by its entries (rows[k],
// cols[k], values[k]) with the strided matrix `dense`: each entry adds values[k] *
// dense[cols[k]] to row rows[k], by a gather and an index_add. float16 and bfloat16 add
// up in float32 and round once, as CUDA's sparse products do. COO and compressed
// products both come here.
at::Tensor sparse_entries_times_dense(const at::Tensor& rows, const at::Tensor& cols,
                                      const at::Tensor& values, const at::Tensor& dense,
                                      int64_t n_rows);

// For kernels that add floats with compare-and-swap, summing in the order threads
// arrive as CUDA's atomics do: under torch.use_deterministic_algorithms this raises (or,
// with warn_only, warns) as CUDA's kernels do, naming "<op> on vkml".
void alert_atomic_adds(const std::string& op);

// Whether t is laid out channels-last (4-d) or channels-last-3d (5-d): the layout the CPU
// and CUDA keep through pooling, normalisation, upsampling, padding and cat.
bool channels_last_layout(const at::Tensor& t);

// `r`, computed contiguous by a kernel that keeps its input's layout on the CPU and CUDA
// (pooling, upsampling, padding, group norm), in the layout of `input`: a channels-last
// (3d) input gives a channels-last (3d) result, at the cost of one copy of it.
at::Tensor in_layout_of(const at::Tensor& r, const at::Tensor& input);

// The dtype the CPU's kernels compute a scalar argument in: float for float16 and
// bfloat16 (PyTorch's opmath type), the dtype itself otherwise.
at::ScalarType opmath_of(at::ScalarType t);

// Raises NotImplementedError naming `op` unless `t` is float32, float16 or bfloat16,
// the storage dtypes of the float-only kernels.
void check_float_storage(const char* op, at::ScalarType t);

// A float64 tensor on a device without float64 arithmetic (shaderFloat64): the ops
// whose float64 kernels compute in double send it to the counted CPU route.
bool float64_without_arithmetic(const at::Tensor& t);

// The dtypes of the float-only kernels that declare f64 (float_store.glsl's FT):
// float32, float16 and bfloat16 storage, and float64 where the device has float64
// arithmetic.
bool float_kernel_dtype(const at::Tensor& t);

// Whether a kernel thread looping `iterations` times on t's device would pass half its
// loop iteration limit (DeviceInfo::loop_iteration_limit: Mesa 22.3's lavapipe stops an
// invocation's loops short, silently, past it; half, as the kernels' other loops share
// the count). Callers then take another path there: the CPU route, or another kernel.
// Calls fn with views of `ts` (tensors of one shape) that have at most vkml::kMaxDims
// dims and together cover them: PyTorch allows 64 dims, the kernels' layouts hold 12.
// Dims of size 1 are dropped, then the tensors are sliced along their smallest dim until
// few enough remain (an einsum's 13-dim intermediate: one or two launches).
void for_each_kernel_view(const std::vector<at::Tensor>& ts,
                          const std::function<void(const std::vector<at::Tensor>&)>& fn);

bool past_loop_limit(const at::Tensor& t, int64_t iterations);

// Whether kernels that give a line along dim d of t to one thread when elements follow it
// (scan, softmax), walking it `passes` times, would pass it. Callers then move d last,
// where long rows get workgroups.
bool line_walk_too_long(const at::Tensor& t, int64_t d, int passes);

}  // namespace vkml_aten
