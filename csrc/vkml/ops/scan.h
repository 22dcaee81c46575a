#pragma once
// Inclusive scans along the middle dim of a contiguous [outer, n, inner] tensor.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/scan_push.h"

namespace vkml::ops {

enum class ScanOp {
  Sum = SCAN_SUM,
  Prod = SCAN_PROD,
  Max = SCAN_MAX,
  Min = SCAN_MIN,
  LogSumExp = SCAN_LSE
};

struct ScanArgs {
  ScanOp op = ScanOp::Sum;
  DType dtype = DType::f32;  // of input and output: f32, f16, bf16, i32, i64, u8 (b8 for Max/Min)
  uint64_t in = 0, out = 0;  // contiguous [outer, n, inner]
  uint64_t indices = 0;      // int64 [outer, n, inner], Max / Min only
  int64_t outer = 1, n = 1, inner = 1;
};

// cummax / cummin pick the last of equal values and the last NaN (as PyTorch's
// CPU loop does). LogSumExp needs a floating dtype.
void scan(Device& dev, const ScanArgs& args);

}  // namespace vkml::ops
