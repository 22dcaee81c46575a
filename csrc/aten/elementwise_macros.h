#pragma once
// Functional, in-place and out= forms of an elementwise op share one body;
// these macros spell the three signatures and their registrations.
#include <torch/library.h>

#include "elementwise_call.h"
#include "fallback.h"

namespace vkml_aten {
// A Python number as PyTorch passes it to kernels: a CPU 0-dim wrapped number.
inline at::Tensor wrap(const at::Scalar& s) {
  at::Tensor t = at::scalar_tensor(
      s, at::TensorOptions().device(at::kCPU).dtype(s.isComplex()         ? at::kComplexDouble
                                                    : s.isFloatingPoint() ? at::kDouble
                                                    : s.isBoolean()       ? at::kBool
                                                                          : at::kLong));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

}  // namespace vkml_aten

// fn is the aten name: fn, fn_ and fn.out are registered, float64 ops without
// a kernel take the CPU route.
#define VKML_UNARY(fn, OP)                                                  \
  at::Tensor fn(const at::Tensor& a) {                                      \
    if (runs_on_cpu(OP, {a})) return cpu_route<at::_ops::fn>(a);            \
    return elementwise(OP, {a});                                            \
  }                                                                         \
  at::Tensor& fn##_(at::Tensor& a) {                                        \
    if (runs_on_cpu(OP, {a})) return cpu_route<at::_ops::fn##_>(a);         \
    elementwise(OP, {a}, a);                                                \
    return a;                                                               \
  }                                                                         \
  at::Tensor& fn##_out(const at::Tensor& a, at::Tensor& out) {              \
    if (runs_on_cpu(OP, {a})) return cpu_route<at::_ops::fn##_out>(a, out); \
    elementwise(OP, {a}, out);                                              \
    return out;                                                             \
  }

#define VKML_REGISTER_UNARY(m, name, fn) \
  m.impl(name, TORCH_FN(fn));            \
  m.impl(name "_", TORCH_FN(fn##_));     \
  m.impl(name ".out", TORCH_FN(fn##_out))

// Some binary ops have no in-place form in aten (maximum, minimum): the
// in-place function is then simply not registered.
#define VKML_BINARY(fn, OP)                                                                   \
  at::Tensor fn(const at::Tensor& a, const at::Tensor& b) { return elementwise(OP, {a, b}); } \
  [[maybe_unused]] at::Tensor& fn##_(at::Tensor& a, const at::Tensor& b) {                    \
    elementwise(OP, {a, b}, a);                                                               \
    return a;                                                                                 \
  }                                                                                           \
  at::Tensor& fn##_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {           \
    elementwise(OP, {a, b}, out);                                                             \
    return out;                                                                               \
  }

// VKML_BINARY with the CPU route (at::_ops:: functional, in-place, out).
#define VKML_BINARY_ROUTED(fn, OP, OpF, OpI, OpO)                                   \
  at::Tensor fn(const at::Tensor& a, const at::Tensor& b) {                         \
    if (runs_on_cpu(OP, {a, b})) return cpu_route<at::_ops::OpF>(a, b);             \
    return elementwise(OP, {a, b});                                                 \
  }                                                                                 \
  [[maybe_unused]] at::Tensor& fn##_(at::Tensor& a, const at::Tensor& b) {          \
    if (runs_on_cpu(OP, {a, b})) return cpu_route<at::_ops::OpI>(a, b);             \
    elementwise(OP, {a, b}, a);                                                     \
    return a;                                                                       \
  }                                                                                 \
  at::Tensor& fn##_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) { \
    if (runs_on_cpu(OP, {a, b})) return cpu_route<at::_ops::OpO>(a, b, out);        \
    elementwise(OP, {a, b}, out);                                                   \
    return out;                                                                     \
  }

// The .Scalar overloads, for ops where aten does not decompose them itself.
#define VKML_BINARY_SCALAR(fn, OP)                                                    \
  at::Tensor fn##_s(const at::Tensor& a, const at::Scalar& b) {                       \
    return elementwise(OP, {a, wrap(b)});                                             \
  }                                                                                   \
  at::Tensor& fn##_s_(at::Tensor& a, const at::Scalar& b) {                           \
    elementwise(OP, {a, wrap(b)}, a);                                                 \
    return a;                                                                         \
  }                                                                                   \
  at::Tensor& fn##_s_out(const at::Tensor& a, const at::Scalar& b, at::Tensor& out) { \
    elementwise(OP, {a, wrap(b)}, out);                                               \
    return out;                                                                       \
  }

// name.Tensor / name_.Tensor / name.Tensor_out (+ the .Scalar forms when given).
#define VKML_REGISTER_BINARY(m, name, fn, tensor_overload, tensor_out) \
  m.impl(name "." tensor_overload, TORCH_FN(fn));                      \
  m.impl(name "_." tensor_overload, TORCH_FN(fn##_));                  \
  m.impl(name "." tensor_out, TORCH_FN(fn##_out))

#define VKML_REGISTER_BINARY_SCALAR(m, name, fn, scalar_overload, scalar_out) \
  m.impl(name "." scalar_overload, TORCH_FN(fn##_s));                         \
  m.impl(name "_." scalar_overload, TORCH_FN(fn##_s_));                       \
  m.impl(name "." scalar_out, TORCH_FN(fn##_s_out))
