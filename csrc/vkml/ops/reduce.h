#pragma once
// Reductions over the middle dim of a contiguous [outer, r, inner] tensor.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/reduce_push.h"

namespace vkml::ops {

enum class ReduceOp {
  Sum = REDUCE_SUM,
  Prod = REDUCE_PROD,
  Max = REDUCE_MAX,
  Min = REDUCE_MIN,
  ArgMax = REDUCE_ARGMAX,
  ArgMin = REDUCE_ARGMIN,
  All = REDUCE_ALL,
  Any = REDUCE_ANY
};

struct ReduceArgs {
  ReduceOp op = ReduceOp::Sum;
  DType dtype = DType::f32;  // of input and values output: f32, f16, i32, i64, u8 (bool)
  uint64_t in = 0;           // contiguous [outer, r, inner]
  int64_t outer = 1, r = 1, inner = 1;
  uint64_t out = 0;      // contiguous [outer, inner] values (0: none, for Arg*)
  uint64_t indices = 0;  // contiguous [outer, inner] int64 (Max/Min/Arg*), 0: none
  double scale = 1.0;    // the result is multiplied by it (mean = sum * 1/r); not f64
};

// NaN wins in Max/Min (and its index is reported), as in PyTorch. Sum over
// r == 0 gives 0, Prod 1, All true, Any false; Max/Min need r > 0.
void reduce(Device& dev, const ReduceArgs& args);

}  // namespace vkml::ops
