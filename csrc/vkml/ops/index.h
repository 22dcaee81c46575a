#pragma once
// Indexed gather and scatter along one dim (see shaders/index.comp).
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/index_push.h"

namespace vkml::ops {

enum class IndexMode { Gather = INDEX_GATHER, Scatter = INDEX_SCATTER };
enum class IndexReduce {
  Assign = INDEX_ASSIGN,
  Add = INDEX_ADD,
  Mul = INDEX_MUL,
  Max = INDEX_MAX,
  Min = INDEX_MIN
};

// dst, src and idx are views over one iteration shape (same ndim and sizes; the
// strides say where each operand's element of an iteration point is). For a
// gather the index value k moves src by k * dim_stride; for a scatter it moves
// dst. src.address == 0 means "use `value`" (scatter only).
//   gather:  dst[p] = src[p + k * dim_stride]           (0 where k is out of range)
//   scatter: dst[p + k * dim_stride] (reduce)= src[p]   (skipped where k is out of range)
// k is out of range outside [0, dim_size), or [-dim_size, dim_size) with
// wrap_negative (negatives count from the end). With skip set, points whose
// index equals skip_value are left out (embedding padding_idx).
struct IndexArgs {
  IndexMode mode = IndexMode::Gather;
  IndexReduce reduce = IndexReduce::Assign;
  DType dtype = DType::f32;  // of dst and src: f32, f16 (Assign only), bf16, i32, i64, u8, b8
  TensorRef dst, src, idx;   // idx dtype i64 or i32
  Scalar value;
  int64_t dim_stride = 0;
  int64_t dim_size = 0;
  bool wrap_negative = false;
  bool skip = false;
  int64_t skip_value = 0;
  // Scatters (reductions and copies) run in one invocation in element order:
  // deterministic and matching a sequential CPU loop, but slow. Forced for reductions
  // where no atomic exists.
  bool serial = false;
};

void index_op(Device& dev, const IndexArgs& args);

}  // namespace vkml::ops
