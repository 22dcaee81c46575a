#include "vkml/core/dtype.h"

namespace vkml {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::f64:
      return "float64";
    case DType::i64:
      return "int64";
    case DType::i32:
      return "int32";
    case DType::i16:
      return "int16";
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::b8:
      return "bool";
  }
  return "?";
}

}  // namespace vkml
