#pragma once
// Element types of the core. The numeric codes are shared with the shaders
// (shaders/dtype_codes.h) and must not change order.
#include <cstddef>
#include <cstdint>

#include "vkml/shaders/dtype_codes.h"

namespace vkml {

enum class DType : uint8_t {
  f32 = DT_F32,
  f16 = DT_F16,
  bf16 = DT_BF16,
  f64 = DT_F64,
  i64 = DT_I64,
  i32 = DT_I32,
  i16 = DT_I16,
  i8 = DT_I8,
  u8 = DT_U8,
  b8 = DT_BOOL,
};

inline size_t itemsize(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
      return 2;
    default:
      return 1;
  }
}

inline bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}

const char* dtype_name(DType t);

// A number handed to a kernel, kept exactly in the form its dtype needs.
struct Scalar {
  double f = 0;
  int64_t i = 0;
  static Scalar of(double v) { return {v, static_cast<int64_t>(v)}; }
  static Scalar of_int(int64_t v) { return {static_cast<double>(v), v}; }
};

}  // namespace vkml
