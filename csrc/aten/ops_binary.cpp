// Binary elementwise ops: arithmetic, comparisons, logical and bitwise ops.
#include <ATen/native/BinaryOps.h>

#include "elementwise_macros.h"
#include "op_helpers.h"
#include "vkml/shaders/op_codes.h"

namespace vkml_aten {
namespace {

const EwOp kAdd{OP_ADD, "add"};
const EwOp kSub{OP_SUB, "sub"};
const EwOp kMul{OP_MUL, "mul"};
const EwOp kDiv{OP_DIV, "div", ResultType::PromoteToFloat};
const EwOp kDivTrunc{OP_DIV_TRUNC, "div"};
const EwOp kDivFloor{OP_DIV_FLOOR, "div"};
const EwOp kMaximum{OP_MAXIMUM, "maximum"};
const EwOp kMinimum{OP_MINIMUM, "minimum"};
const EwOp kPow{OP_POW, "pow"};
const EwOp kRemainder{OP_REMAINDER, "remainder"};
const EwOp kFmod{OP_FMOD, "fmod"};
const EwOp kAtan2{OP_ATAN2, "atan2", ResultType::PromoteToFloat};
const EwOp kEq{OP_EQ, "eq", ResultType::Bool};
const EwOp kNe{OP_NE, "ne", ResultType::Bool};
const EwOp kLt{OP_LT, "lt", ResultType::Bool};
const EwOp kLe{OP_LE, "le", ResultType::Bool};
const EwOp kGt{OP_GT, "gt", ResultType::Bool};
const EwOp kGe{OP_GE, "ge", ResultType::Bool};
const EwOp kLogicalAnd{OP_LOGICAL_AND, "logical_and", ResultType::Bool};
const EwOp kLogicalOr{OP_LOGICAL_OR, "logical_or", ResultType::Bool};
const EwOp kLogicalXor{OP_LOGICAL_XOR, "logical_xor", ResultType::Bool};
const EwOp kBitAnd{OP_BITWISE_AND, "bitwise_and", ResultType::Promote, false, true};
const EwOp kBitOr{OP_BITWISE_OR, "bitwise_or", ResultType::Promote, false, true};
const EwOp kBitXor{OP_BITWISE_XOR, "bitwise_xor", ResultType::Promote, false, true};
const EwOp kThresholdBackward{OP_THRESHOLD_BACKWARD, "threshold_backward"};
const EwOp kSigmoidBackward{OP_SIGMOID_BACKWARD, "sigmoid_backward"};
const EwOp kTanhBackward{OP_TANH_BACKWARD, "tanh_backward"};
const EwOp kSiluBackward{OP_SILU_BACKWARD, "silu_backward"};
const EwOp kGeluBackward{OP_GELU_BACKWARD, "gelu_backward"};
const EwOp kGeluTanhBackward{OP_GELU_TANH_BACKWARD, "gelu_backward"};
const EwOp kLogitBackward{OP_LOGIT_BACKWARD, "logit_backward"};
const EwOp kHypot{OP_HYPOT, "hypot", ResultType::Promote, /*float_only=*/true};
const EwOp kCopysign{OP_COPYSIGN, "copysign", ResultType::PromoteToFloat};
const EwOp kXlogy{OP_XLOGY, "xlogy", ResultType::PromoteToFloat};
const EwOp kFmax{OP_FMAX, "fmax"};
const EwOp kFmin{OP_FMIN, "fmin"};
// Shifts: integers only, with PyTorch's out-of-range shift rules; bool inputs promote
// with an integer operand (True << 2 is 4) and raise only when both are bool.
const EwOp kShiftLeft{OP_SHIFT_LEFT, "lshift_cpu", ResultType::Promote, false, true, true};
const EwOp kShiftRight{OP_SHIFT_RIGHT, "rshift_cpu", ResultType::Promote, false, true, true};
const EwOp kNextafter{OP_NEXTAFTER, "nextafter", ResultType::Promote, true};
const EwOp kLogaddexp{OP_LOGADDEXP, "logaddexp", ResultType::Promote, true};
const EwOp kLogaddexp2{OP_LOGADDEXP2, "logaddexp2", ResultType::Promote, true};
const EwOp kHeaviside{.code = OP_HEAVISIDE, .name = "heaviside", .out_exact = true};
const EwOp kXlog1py{OP_XLOG1PY, "special_xlog1py", ResultType::PromoteToFloat};

// ATen's checks of alpha against the result dtype (a float alpha for integers raises).
void check_alpha(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) {
  at::native::alpha_check(at::result_type(a, b), alpha);
}

// add / sub carry alpha in slot 2.
at::Tensor add(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) {
  check_alpha(a, b, alpha);
  return elementwise(kAdd, {a, b}, {}, {.s2 = alpha, .fits = ScalarFits::Dtype});
}
at::Tensor& add_(at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) {
  check_alpha(a, b, alpha);
  elementwise(kAdd, {a, b}, a, {.s2 = alpha, .fits = ScalarFits::Dtype});
  return a;
}
at::Tensor& add_out(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha,
                    at::Tensor& out) {
  check_alpha(a, b, alpha);
  elementwise(kAdd, {a, b}, out, {.s2 = alpha, .fits = ScalarFits::Dtype});
  return out;
}
at::Tensor sub(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) {
  check_alpha(a, b, alpha);
  at::native::sub_check(a, b);  // ATen's, so the error is the installed torch's
  return elementwise(kSub, {a, b}, {}, {.s2 = alpha, .fits = ScalarFits::Dtype});
}
at::Tensor& sub_(at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) {
  check_alpha(a, b, alpha);
  at::native::sub_check(a, b);
  elementwise(kSub, {a, b}, a, {.s2 = alpha, .fits = ScalarFits::Dtype});
  return a;
}
at::Tensor& sub_out(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha,
                    at::Tensor& out) {
  check_alpha(a, b, alpha);
  at::native::sub_check(a, b);
  elementwise(kSub, {a, b}, out, {.s2 = alpha, .fits = ScalarFits::Dtype});
  return out;
}
at::Tensor rsub(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) {
  check_alpha(b, a, alpha);
  at::native::sub_check(b, a);
  return elementwise(kSub, {b, a}, {}, {.s2 = alpha, .fits = ScalarFits::Dtype});
}

VKML_BINARY(mul, kMul)
VKML_BINARY(div, kDiv)
VKML_BINARY(maximum, kMaximum)
VKML_BINARY(minimum, kMinimum)
VKML_BINARY(remainder, kRemainder)
VKML_BINARY(fmod, kFmod)
VKML_BINARY_ROUTED(atan2, kAtan2, atan2, atan2_, atan2_out)
VKML_BINARY_ROUTED(hypot, kHypot, hypot, hypot_, hypot_out)
VKML_BINARY_ROUTED(xlogy, kXlogy, xlogy_Tensor, xlogy__Tensor, xlogy_OutTensor)
VKML_BINARY(copysign, kCopysign)
VKML_BINARY(fmax, kFmax)
VKML_BINARY(fmin, kFmin)
VKML_BINARY(floor_divide, kDivFloor)

// heaviside: PyTorch wants both operands of one dtype.
void check_heaviside(const at::Tensor& a, const at::Tensor& v, const at::Tensor* out = nullptr) {
  TORCH_CHECK(!a.is_complex() && !v.is_complex() && !(out != nullptr && out->is_complex()),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(a.scalar_type() == v.scalar_type(),
              "heaviside is not yet implemented for tensors with different dtypes.");
}
at::Tensor heaviside(const at::Tensor& a, const at::Tensor& v) {
  check_heaviside(a, v);
  return elementwise(kHeaviside, {a, v});
}
at::Tensor& heaviside_(at::Tensor& a, const at::Tensor& v) {
  check_heaviside(a, v);
  elementwise(kHeaviside, {a, v}, a);
  return a;
}
at::Tensor& heaviside_out(const at::Tensor& a, const at::Tensor& v, at::Tensor& out) {
  check_heaviside(a, v, &out);
  elementwise(kHeaviside, {a, v}, out);
  return out;
}

// Shifts also take a Scalar amount (__lshift__.Scalar and friends).
#define VKML_SHIFT(fn, OP)                                                               \
  VKML_BINARY(fn, OP)                                                                    \
  at::Tensor fn##_s(const at::Tensor& a, const at::Scalar& b) { return fn(a, wrap(b)); } \
  at::Tensor& fn##_s_(at::Tensor& a, const at::Scalar& b) { return fn##_(a, wrap(b)); }  \
  at::Tensor& fn##_s_out(const at::Tensor& a, const at::Scalar& b, at::Tensor& out) {    \
    return fn##_out(a, wrap(b), out);                                                    \
  }
VKML_SHIFT(lshift, kShiftLeft)
VKML_SHIFT(rshift, kShiftRight)

// nextafter steps one ulp of the storage dtype (the kernels step its bits).
VKML_BINARY_ROUTED(nextafter, kNextafter, nextafter, nextafter_, nextafter_out)

// special_xlog1py: x * log1p(y), 0 where x == 0 (no in-place form in aten).
at::Tensor xlog1py(const at::Tensor& a, const at::Tensor& b) {
  if (runs_on_cpu(kXlog1py, {a, b})) return cpu_route<at::_ops::special_xlog1py>(a, b);
  return elementwise(kXlog1py, {a, b});
}
at::Tensor& xlog1py_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  if (runs_on_cpu(kXlog1py, {a, b})) return cpu_route<at::_ops::special_xlog1py_out>(a, b, out);
  elementwise(kXlog1py, {a, b}, out);
  return out;
}

// logaddexp / logaddexp2 (no in-place forms in aten).
at::Tensor logaddexp(const at::Tensor& a, const at::Tensor& b) {
  if (runs_on_cpu(kLogaddexp, {a, b})) return cpu_route<at::_ops::logaddexp>(a, b);
  return elementwise(kLogaddexp, {a, b});
}
at::Tensor& logaddexp_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  if (runs_on_cpu(kLogaddexp, {a, b})) return cpu_route<at::_ops::logaddexp_out>(a, b, out);
  elementwise(kLogaddexp, {a, b}, out);
  return out;
}
at::Tensor logaddexp2(const at::Tensor& a, const at::Tensor& b) {
  if (runs_on_cpu(kLogaddexp2, {a, b})) return cpu_route<at::_ops::logaddexp2>(a, b);
  return elementwise(kLogaddexp2, {a, b});
}
at::Tensor& logaddexp2_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  if (runs_on_cpu(kLogaddexp2, {a, b})) return cpu_route<at::_ops::logaddexp2_out>(a, b, out);
  elementwise(kLogaddexp2, {a, b}, out);
  return out;
}

// remainder(Scalar, Tensor): aten does not decompose it.
at::Tensor remainder_st(const at::Scalar& a, const at::Tensor& b) {
  return elementwise(kRemainder, {wrap(a), b});
}
at::Tensor& remainder_st_out(const at::Scalar& a, const at::Tensor& b, at::Tensor& out) {
  elementwise(kRemainder, {wrap(a), b}, out);
  return out;
}
VKML_BINARY(eq, kEq)
VKML_BINARY_SCALAR(eq, kEq)
VKML_BINARY(ne, kNe)
VKML_BINARY_SCALAR(ne, kNe)
VKML_BINARY(lt, kLt)
VKML_BINARY_SCALAR(lt, kLt)
VKML_BINARY(le, kLe)
VKML_BINARY_SCALAR(le, kLe)
VKML_BINARY(gt, kGt)
VKML_BINARY_SCALAR(gt, kGt)
VKML_BINARY(ge, kGe)
VKML_BINARY_SCALAR(ge, kGe)
VKML_BINARY(logical_and, kLogicalAnd)
VKML_BINARY(logical_or, kLogicalOr)
VKML_BINARY(logical_xor, kLogicalXor)
VKML_BINARY(bitwise_and, kBitAnd)
VKML_BINARY(bitwise_or, kBitOr)
VKML_BINARY(bitwise_xor, kBitXor)

const EwOp& div_mode_op(std::optional<c10::string_view> mode) {
  if (!mode.has_value()) return kDiv;
  if (*mode == "trunc") return kDivTrunc;
  TORCH_CHECK(*mode == "floor",
              "div expected rounding_mode to be one of None, 'trunc', or "
              "'floor' but found '",
              *mode, "'");
  return kDivFloor;
}
at::Tensor div_mode(const at::Tensor& a, const at::Tensor& b,
                    std::optional<c10::string_view> mode) {
  return elementwise(div_mode_op(mode), {a, b});
}
at::Tensor& div_mode_(at::Tensor& a, const at::Tensor& b, std::optional<c10::string_view> mode) {
  elementwise(div_mode_op(mode), {a, b}, a);
  return a;
}
at::Tensor& div_mode_out(const at::Tensor& a, const at::Tensor& b,
                         std::optional<c10::string_view> mode, at::Tensor& out) {
  elementwise(div_mode_op(mode), {a, b}, out);
  return out;
}

// pow: integer tensors raised to a float exponent promote like any binary op.
at::Tensor pow_tt(const at::Tensor& a, const at::Tensor& b) {
  if (runs_on_cpu(kPow, {a, b})) return cpu_route<at::_ops::pow_Tensor_Tensor>(a, b);
  return elementwise(kPow, {a, b});
}
at::Tensor& pow_tt_(at::Tensor& a, const at::Tensor& b) {
  if (runs_on_cpu(kPow, {a, b})) return cpu_route<at::_ops::pow__Tensor>(a, b);
  elementwise(kPow, {a, b}, a);
  return a;
}
at::Tensor& pow_tt_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  if (runs_on_cpu(kPow, {a, b})) return cpu_route<at::_ops::pow_Tensor_Tensor_out>(a, b, out);
  elementwise(kPow, {a, b}, out);
  return out;
}
void check_int_pow(const at::Tensor& a, const at::Scalar& b) {
  TORCH_CHECK(!(at::isIntegralType(a.scalar_type(), true) && b.isIntegral(true) && b.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  // The CPU converts the exponent to an integer, float16 or bfloat16 result's dtype.
  const at::ScalarType t = at::result_type(a, b);
  if (at::isIntegralType(t, true) || t == at::kHalf || t == at::kBFloat16) check_scalar_fits(b, t);
}
// float64 x ** 2 and friends need no transcendental function: spelled with
// native ops (as PyTorch's own pow does for these exponents) instead of the CPU.
std::optional<at::Tensor> pow_by_native_ops(const at::Tensor& a, const at::Scalar& b) {
  if (b.isComplex() || b.isBoolean()) return std::nullopt;
  double e = b.toDouble();
  if (e == 0) return at::ones_like(a);  // even of NaN, as std::pow
  if (e == 1) return a.clone();         // pow's backward of x ** 2 asks for x ** 1
  if (e == 2) return at::mul(a, a);
  if (e == 3) return at::mul(at::mul(a, a), a);
  if (e == 0.5) return at::sqrt(a);
  if (e == -0.5) return at::rsqrt(a);
  if (e == -1) return at::reciprocal(a);
  if (e == -2) return at::reciprocal(at::mul(a, a));
  return std::nullopt;
}
at::Tensor pow_ts(const at::Tensor& a, const at::Scalar& b) {
  check_int_pow(a, b);
  if (runs_on_cpu(kPow, {a, wrap(b)})) {
    if (auto r = pow_by_native_ops(a, b)) return *r;
    return cpu_route<at::_ops::pow_Tensor_Scalar>(a, b);
  }
  return elementwise(kPow, {a, wrap(b)});
}
at::Tensor& pow_ts_(at::Tensor& a, const at::Scalar& b) {
  check_int_pow(a, b);
  if (runs_on_cpu(kPow, {a, wrap(b)})) {
    if (auto r = pow_by_native_ops(a, b)) return a.copy_(*r);
    return cpu_route<at::_ops::pow__Scalar>(a, b);
  }
  elementwise(kPow, {a, wrap(b)}, a);
  return a;
}
at::Tensor& pow_ts_out(const at::Tensor& a, const at::Scalar& b, at::Tensor& out) {
  check_int_pow(a, b);
  if (runs_on_cpu(kPow, {a, wrap(b)})) {
    if (auto r = pow_by_native_ops(a, b)) return write_out(out, *r);
    return cpu_route<at::_ops::pow_Tensor_Scalar_out>(a, b, out);
  }
  elementwise(kPow, {a, wrap(b)}, out);
  return out;
}
at::Tensor pow_st(const at::Scalar& a, const at::Tensor& b) {
  if (runs_on_cpu(kPow, {wrap(a), b})) return cpu_route<at::_ops::pow_Scalar>(a, b);
  return elementwise(kPow, {wrap(a), b});
}
at::Tensor& pow_st_out(const at::Scalar& a, const at::Tensor& b, at::Tensor& out) {
  if (runs_on_cpu(kPow, {wrap(a), b})) return cpu_route<at::_ops::pow_Scalar_out>(a, b, out);
  elementwise(kPow, {wrap(a), b}, out);
  return out;
}

// Backward helpers (grad, saved value) with a parameter in slot 2.
at::Tensor& threshold_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                   const at::Scalar& threshold, at::Tensor& grad_input) {
  elementwise(kThresholdBackward, {grad, self}, grad_input, {.s2 = threshold});
  return grad_input;
}
at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self,
                              const at::Scalar& threshold) {
  return elementwise(kThresholdBackward, {grad, self}, {}, {.s2 = threshold});
}
at::Tensor& sigmoid_backward_out(const at::Tensor& grad, const at::Tensor& y, at::Tensor& out) {
  elementwise(kSigmoidBackward, {grad, y}, out);
  return out;
}
at::Tensor sigmoid_backward(const at::Tensor& grad, const at::Tensor& y) {
  return elementwise(kSigmoidBackward, {grad, y});
}
at::Tensor& tanh_backward_out(const at::Tensor& grad, const at::Tensor& y, at::Tensor& out) {
  elementwise(kTanhBackward, {grad, y}, out);
  return out;
}
at::Tensor tanh_backward(const at::Tensor& grad, const at::Tensor& y) {
  return elementwise(kTanhBackward, {grad, y});
}
at::Tensor& silu_backward_out(const at::Tensor& grad, const at::Tensor& x, at::Tensor& out) {
  if (runs_on_cpu(kSiluBackward, {grad, x}))
    return cpu_route<at::_ops::silu_backward_grad_input>(grad, x, out);
  elementwise(kSiluBackward, {grad, x}, out);
  return out;
}
at::Tensor silu_backward(const at::Tensor& grad, const at::Tensor& x) {
  if (runs_on_cpu(kSiluBackward, {grad, x})) return cpu_route<at::_ops::silu_backward>(grad, x);
  return elementwise(kSiluBackward, {grad, x});
}
const EwOp& gelu_backward_op(c10::string_view approximate) {
  if (approximate == "tanh") return kGeluTanhBackward;
  TORCH_CHECK(approximate == "none", "approximate argument must be either none or tanh.");
  return kGeluBackward;
}
at::Tensor& gelu_backward_out(const at::Tensor& grad, const at::Tensor& x,
                              c10::string_view approximate, at::Tensor& out) {
  const EwOp& op = gelu_backward_op(approximate);
  if (runs_on_cpu(op, {grad, x}))
    return cpu_route<at::_ops::gelu_backward_grad_input>(grad, x, approximate, out);
  elementwise(op, {grad, x}, out);
  return out;
}
at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& x,
                         c10::string_view approximate) {
  const EwOp& op = gelu_backward_op(approximate);
  if (runs_on_cpu(op, {grad, x})) return cpu_route<at::_ops::gelu_backward>(grad, x, approximate);
  return elementwise(op, {grad, x});
}
EwParams logit_eps(std::optional<double> eps) { return {.fp = {eps.value_or(-1.0)}}; }
at::Tensor& logit_backward_out(const at::Tensor& grad, const at::Tensor& x,
                               std::optional<double> eps, at::Tensor& out) {
  if (runs_on_cpu(kLogitBackward, {grad, x}))
    return cpu_route<at::_ops::logit_backward_grad_input>(grad, x, eps, out);
  elementwise(kLogitBackward, {grad, x}, out, logit_eps(eps));
  return out;
}
at::Tensor logit_backward(const at::Tensor& grad, const at::Tensor& x, std::optional<double> eps) {
  if (runs_on_cpu(kLogitBackward, {grad, x}))
    return cpu_route<at::_ops::logit_backward>(grad, x, eps);
  return elementwise(kLogitBackward, {grad, x}, {}, logit_eps(eps));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("add.Tensor", TORCH_FN(add));
  m.impl("add_.Tensor", TORCH_FN(add_));
  m.impl("add.out", TORCH_FN(add_out));
  m.impl("sub.Tensor", TORCH_FN(sub));
  m.impl("sub_.Tensor", TORCH_FN(sub_));
  m.impl("sub.out", TORCH_FN(sub_out));
  m.impl("rsub.Tensor", TORCH_FN(rsub));
  VKML_REGISTER_BINARY(m, "mul", mul, "Tensor", "out");
  VKML_REGISTER_BINARY(m, "div", div, "Tensor", "out");
  m.impl("div.Tensor_mode", TORCH_FN(div_mode));
  m.impl("div_.Tensor_mode", TORCH_FN(div_mode_));
  m.impl("div.out_mode", TORCH_FN(div_mode_out));
  m.impl("maximum", TORCH_FN(maximum));
  m.impl("maximum.out", TORCH_FN(maximum_out));
  m.impl("minimum", TORCH_FN(minimum));
  m.impl("minimum.out", TORCH_FN(minimum_out));
  VKML_REGISTER_BINARY(m, "remainder", remainder, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY(m, "fmod", fmod, "Tensor", "Tensor_out");
  m.impl("atan2", TORCH_FN(atan2));
  m.impl("atan2_", TORCH_FN(atan2_));
  m.impl("atan2.out", TORCH_FN(atan2_out));
  VKML_REGISTER_BINARY(m, "eq", eq, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY_SCALAR(m, "eq", eq, "Scalar", "Scalar_out");
  VKML_REGISTER_BINARY(m, "ne", ne, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY_SCALAR(m, "ne", ne, "Scalar", "Scalar_out");
  VKML_REGISTER_BINARY(m, "lt", lt, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY_SCALAR(m, "lt", lt, "Scalar", "Scalar_out");
  VKML_REGISTER_BINARY(m, "le", le, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY_SCALAR(m, "le", le, "Scalar", "Scalar_out");
  VKML_REGISTER_BINARY(m, "gt", gt, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY_SCALAR(m, "gt", gt, "Scalar", "Scalar_out");
  VKML_REGISTER_BINARY(m, "ge", ge, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY_SCALAR(m, "ge", ge, "Scalar", "Scalar_out");
  m.impl("logical_and", TORCH_FN(logical_and));
  m.impl("logical_and_", TORCH_FN(logical_and_));
  m.impl("logical_and.out", TORCH_FN(logical_and_out));
  m.impl("logical_or", TORCH_FN(logical_or));
  m.impl("logical_or_", TORCH_FN(logical_or_));
  m.impl("logical_or.out", TORCH_FN(logical_or_out));
  m.impl("logical_xor", TORCH_FN(logical_xor));
  m.impl("logical_xor_", TORCH_FN(logical_xor_));
  m.impl("logical_xor.out", TORCH_FN(logical_xor_out));
  VKML_REGISTER_BINARY(m, "bitwise_and", bitwise_and, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY(m, "bitwise_or", bitwise_or, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY(m, "bitwise_xor", bitwise_xor, "Tensor", "Tensor_out");
  m.impl("pow.Tensor_Tensor", TORCH_FN(pow_tt));
  m.impl("pow_.Tensor", TORCH_FN(pow_tt_));
  m.impl("pow.Tensor_Tensor_out", TORCH_FN(pow_tt_out));
  m.impl("pow.Tensor_Scalar", TORCH_FN(pow_ts));
  m.impl("pow_.Scalar", TORCH_FN(pow_ts_));
  m.impl("pow.Tensor_Scalar_out", TORCH_FN(pow_ts_out));
  m.impl("pow.Scalar", TORCH_FN(pow_st));
  m.impl("pow.Scalar_out", TORCH_FN(pow_st_out));
  m.impl("threshold_backward", TORCH_FN(threshold_backward));
  m.impl("threshold_backward.grad_input", TORCH_FN(threshold_backward_out));
  m.impl("sigmoid_backward", TORCH_FN(sigmoid_backward));
  m.impl("sigmoid_backward.grad_input", TORCH_FN(sigmoid_backward_out));
  m.impl("tanh_backward", TORCH_FN(tanh_backward));
  m.impl("tanh_backward.grad_input", TORCH_FN(tanh_backward_out));
  m.impl("silu_backward", TORCH_FN(silu_backward));
  m.impl("silu_backward.grad_input", TORCH_FN(silu_backward_out));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
  m.impl("gelu_backward.grad_input", TORCH_FN(gelu_backward_out));
  m.impl("logit_backward", TORCH_FN(logit_backward));
  m.impl("logit_backward.grad_input", TORCH_FN(logit_backward_out));
  m.impl("hypot", TORCH_FN(hypot));
  m.impl("hypot_", TORCH_FN(hypot_));
  m.impl("hypot.out", TORCH_FN(hypot_out));
  VKML_REGISTER_BINARY(m, "xlogy", xlogy, "Tensor", "OutTensor");
  VKML_REGISTER_BINARY(m, "copysign", copysign, "Tensor", "out");
  m.impl("fmax", TORCH_FN(fmax));
  m.impl("fmax.out", TORCH_FN(fmax_out));
  m.impl("fmin", TORCH_FN(fmin));
  m.impl("fmin.out", TORCH_FN(fmin_out));
  m.impl("floor_divide", TORCH_FN(floor_divide));
  m.impl("floor_divide_.Tensor", TORCH_FN(floor_divide_));
  m.impl("floor_divide.out", TORCH_FN(floor_divide_out));
  m.impl("heaviside", TORCH_FN(heaviside));
  m.impl("heaviside_", TORCH_FN(heaviside_));
  m.impl("heaviside.out", TORCH_FN(heaviside_out));
  VKML_REGISTER_BINARY(m, "bitwise_left_shift", lshift, "Tensor", "Tensor_out");
  VKML_REGISTER_BINARY(m, "bitwise_right_shift", rshift, "Tensor", "Tensor_out");
  m.impl("__lshift__.Tensor", TORCH_FN(lshift));
  m.impl("__lshift__.Tensor_out", TORCH_FN(lshift_out));
  m.impl("__ilshift__.Tensor", TORCH_FN(lshift_));
  m.impl("__lshift__.Scalar", TORCH_FN(lshift_s));
  m.impl("__lshift__.Scalar_out", TORCH_FN(lshift_s_out));
  m.impl("__ilshift__.Scalar", TORCH_FN(lshift_s_));
  m.impl("__rshift__.Tensor", TORCH_FN(rshift));
  m.impl("__rshift__.Tensor_out", TORCH_FN(rshift_out));
  m.impl("__irshift__.Tensor", TORCH_FN(rshift_));
  m.impl("__rshift__.Scalar", TORCH_FN(rshift_s));
  m.impl("__rshift__.Scalar_out", TORCH_FN(rshift_s_out));
  m.impl("__irshift__.Scalar", TORCH_FN(rshift_s_));
  m.impl("nextafter", TORCH_FN(nextafter));
  m.impl("nextafter_", TORCH_FN(nextafter_));
  m.impl("nextafter.out", TORCH_FN(nextafter_out));
  m.impl("special_xlog1py", TORCH_FN(xlog1py));
  m.impl("special_xlog1py.out", TORCH_FN(xlog1py_out));
  m.impl("logaddexp", TORCH_FN(logaddexp));
  m.impl("logaddexp.out", TORCH_FN(logaddexp_out));
  m.impl("logaddexp2", TORCH_FN(logaddexp2));
  m.impl("logaddexp2.out", TORCH_FN(logaddexp2_out));
  m.impl("remainder.Scalar_Tensor", TORCH_FN(remainder_st));
  m.impl("remainder.Scalar_Tensor_out", TORCH_FN(remainder_st_out));
}

}  // namespace vkml_aten
