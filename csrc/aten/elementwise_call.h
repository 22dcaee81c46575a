#pragma once
// Running one elementwise kernel with PyTorch's broadcasting, type promotion,
// out= handling and Python scalars. Op files describe an op; this does the rest.
#include <ATen/ATen.h>

#include <initializer_list>
#include <optional>
#include <vector>

#include "vkml/core/dtype.h"

namespace vkml_aten {

enum class ResultType {
  Promote,         // result_type of the inputs
  PromoteToFloat,  // ... and integers/bool become the default float dtype (true division)
  Bool,            // computed in the promoted type, result bool (comparisons)
  FromWhere,       // where(cond, a, b): promoted over inputs 1 and 2, input 0 is a bool condition
};
// The op tables' short spelling of integer inputs giving float results (sqrt, erf, ...).
inline constexpr ResultType kToFloat = ResultType::PromoteToFloat;

struct EwOp {
  int code;
  const char* name;
  ResultType result = ResultType::Promote;
  bool float_only = false;     // integer inputs are an error (e.g. sqrt on int is promoted anyway)
  bool integral_only = false;  // bitwise ops
  bool no_bool = false;        // bool inputs are an error (floor, ceil, round, trunc)
  // An out= of another dtype is an error, not a cast: the CPU kernels that build their
  // iterator on the out's own dtype (abs, neg, floor, sign, where, ...) raise there.
  bool out_exact = false;
};

// Params fill the shader's parameter slots s1/s2 (unary: clamp bounds) or
// s2 (binary alpha, threshold, lerp weight; ternary value); s0 holds a second
// typed parameter of binary ops. fp are float parameters: float32 ones (fparam j in
// the shader, two per slot: slot 2 then slot 0), or doubles for float64 kernels
// (dparam j, one per slot: 2, 0, 1).
// A CPU scalar input whose slot a parameter takes is moved to the device.
// `fits` says where the CPU's kernel converts s0..s2 with Scalar::to<T>(), which raises
// for a value that does not fit T; vkml then raises the same (check_scalar_fits).
enum class ScalarFits : uint8_t {
  Unchecked,
  Dtype,   // T is the compute dtype (fill values, clamp bounds, alpha)
  Opmath,  // T is float for float16 and bfloat16 (addcmul's value)
};
struct EwParams {
  std::optional<at::Scalar> s1;
  std::optional<at::Scalar> s2;
  uint32_t flags = 0;
  std::optional<at::Scalar> s0;
  std::vector<double> fp;
  ScalarFits fits = ScalarFits::Unchecked;
};

// Computes op over inputs into out (allocated when undefined; resized and
// type-checked like a structured out= kernel when given). Returns the result.
at::Tensor elementwise(const EwOp& op, std::initializer_list<at::Tensor> inputs,
                       const at::Tensor& out = at::Tensor(), const EwParams& params = {});

// True when a dtype has elementwise kernels (else the caller falls back).
bool elementwise_dtype(at::ScalarType t);

// True when op over these inputs computes in float64 and the device has no
// float64 kernel for it (GLSL has no double exp/log/sin/...): the caller then
// runs the aten op through the counted CPU fallback (VKML_CPU_ROUTE).
bool runs_on_cpu(const EwOp& op, std::initializer_list<at::Tensor> inputs);

}  // namespace vkml_aten
