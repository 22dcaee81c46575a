#pragma once
// Small helpers every op launcher uses.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/hazards.h"

namespace vkml::ops {

constexpr uint32_t kWorkgroup = 256;

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Split-K for products whose `tiles` output tiles are too few to occupy a GPU (weight
// gradients of GEMMs and convolutions: a small output, a long K): how many K slices
// to run as separate workgroups, whose fp32 partial sums of the `outputs` elements a
// second pass adds. Slices stay at least 256 deep, so that pass stays small next to
// the product; the partials stay within 64 MiB and 32-bit indexing. 1: no split.
// Products of 128 tiles or more are not split. The split grid is larger on GPUs
// (about a thousand workgroups: an H200's 132 SMs each hold several) than on CPU
// devices, whose few cores a few hundred keep busy.
int64_t k_splits(const Device& dev, int64_t tiles, int64_t k, int64_t outputs);

// Whether tiles, split-K grids and kernel tilings are chosen as for a GPU: the device is
// not a CPU one, or set_gpu_choices(true) asked for it, so that tests on lavapipe reach
// the choices every GPU takes by default.
bool gpu_choices(const Device& dev);
void set_gpu_choices(bool on);

// Dispatches enough workgroups of `wg` threads for `threads` invocations,
// spilling into the y dimension beyond maxComputeWorkGroupCount[0]; shaders
// use linear_id() from common.glsl.
// `access` declares the memory the kernel touches (see runtime/hazards.h).
void dispatch_1d(Device& dev, VkPipeline pipeline, const void* push, uint32_t push_size,
                 uint64_t threads, uint32_t wg = kWorkgroup, const Access* access = nullptr);

// Dispatches `groups` workgroups, spilling into the y dimension beyond
// maxComputeWorkGroupCount[0] (shaders derive their group index from x and y).
void dispatch_groups(Device& dev, VkPipeline pipeline, const void* push, uint32_t push_size,
                     uint64_t groups, const Access* access = nullptr);

// The bytes of `count` consecutive elements of `itemsize` bytes at `address`.
inline Span span_elems(uint64_t address, int64_t count, size_t itemsize) {
  return Span{address, address + uint64_t(count) * itemsize};
}

// The bytes a strided operand can touch: from its lowest to its highest
// element (a superset for strided views, which only costs a spare barrier).
Span span_of(uint64_t address, size_t itemsize, int ndim, const int64_t* sizes,
             const int64_t* strides);
Span span_of(const TensorRef& t);

// Fails with InvalidArgument if a kernel indexing with 32-bit offsets cannot
// reach every element of an operand.
void check_32bit_indexing(int64_t numel, int64_t max_offset, const char* op);

// For a kernel that reads and writes floats only (shaders/float_store.glsl, declared
// `//! dtypes f32 f16 bf16`, and f64 where `with_f64`): fails with InvalidArgument for
// other dtypes, for the 16-bit ones on a device without float16 support and for f64 on
// one without float64 arithmetic.
void check_float_dtype(Device& dev, DType t, const char* op, bool with_f64 = false);

}  // namespace vkml::ops
