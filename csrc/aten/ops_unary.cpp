// Unary elementwise ops and activations.
#include <ATen/native/Resize.h>

#include <cmath>
#include <limits>

#include "elementwise_macros.h"
#include "op_helpers.h"
#include "vkml/shaders/op_codes.h"

namespace vkml_aten {
namespace {

const EwOp kNeg{.code = OP_NEG, .name = "neg", .out_exact = true};
const EwOp kAbs{.code = OP_ABS, .name = "abs", .out_exact = true};
const EwOp kSign{.code = OP_SIGN, .name = "sign", .out_exact = true};
const EwOp kSgn{
    .code = OP_SIGN, .name = "sgn", .out_exact = true};  // sign, and z / |z| for complex z
const EwOp kSqrt{OP_SQRT, "sqrt", kToFloat};
const EwOp kRsqrt{OP_RSQRT, "rsqrt", kToFloat};
const EwOp kExp{OP_EXP, "exp", kToFloat};
const EwOp kExp2{OP_EXP2, "exp2", kToFloat};
const EwOp kExpm1{OP_EXPM1, "expm1", kToFloat};
const EwOp kLog{OP_LOG, "log", kToFloat};
const EwOp kLog2{OP_LOG2, "log2", kToFloat};
const EwOp kLog1p{OP_LOG1P, "log1p", kToFloat};
const EwOp kSigmoid{OP_SIGMOID, "sigmoid", kToFloat};
const EwOp kTanh{OP_TANH, "tanh", kToFloat};
const EwOp kReciprocal{OP_RECIPROCAL, "reciprocal", kToFloat};
const EwOp kSin{OP_SIN, "sin", kToFloat};
const EwOp kCos{OP_COS, "cos", kToFloat};
const EwOp kFloor{.code = OP_FLOOR, .name = "floor", .no_bool = true, .out_exact = true};
const EwOp kCeil{.code = OP_CEIL, .name = "ceil", .no_bool = true, .out_exact = true};
const EwOp kRound{.code = OP_ROUND, .name = "round", .no_bool = true, .out_exact = true};
const EwOp kTrunc{.code = OP_TRUNC, .name = "trunc", .no_bool = true, .out_exact = true};
const EwOp kRelu{OP_RELU, "relu"};
const EwOp kSilu{OP_SILU, "silu", kToFloat};
const EwOp kGelu{.code = OP_GELU, .name = "gelu", .result = kToFloat, .out_exact = true};
const EwOp kGeluTanh{.code = OP_GELU_TANH, .name = "gelu", .result = kToFloat, .out_exact = true};
const EwOp kClamp{OP_CLAMP, "clamp"};
const EwOp kClampTensor{OP_CLAMP_TENSOR, "clamp"};
const EwOp kLogicalNot{OP_LOGICAL_NOT, "logical_not", ResultType::Bool};
const EwOp kBitwiseNot{
    .code = OP_BITWISE_NOT, .name = "bitwise_not", .integral_only = true, .out_exact = true};
const EwOp kIsnan{OP_ISNAN, "isnan", ResultType::Bool};
const EwOp kIsinf{OP_ISINF, "isinf", ResultType::Bool};
const EwOp kIsfinite{OP_ISFINITE, "isfinite", ResultType::Bool};
const EwOp kIsposinf{
    .code = OP_ISPOSINF, .name = "isposinf", .result = ResultType::Bool, .out_exact = true};
const EwOp kIsneginf{
    .code = OP_ISNEGINF, .name = "isneginf", .result = ResultType::Bool, .out_exact = true};
const EwOp kSignbit{
    .code = OP_SIGNBIT, .name = "signbit", .result = ResultType::Bool, .out_exact = true};
const EwOp kTan{OP_TAN, "tan", kToFloat};
const EwOp kAsin{OP_ASIN, "asin", kToFloat};
const EwOp kAcos{OP_ACOS, "acos", kToFloat};
const EwOp kAtan{OP_ATAN, "atan", kToFloat};
const EwOp kSinh{OP_SINH, "sinh", kToFloat};
const EwOp kCosh{OP_COSH, "cosh", kToFloat};
const EwOp kAsinh{OP_ASINH, "asinh", kToFloat};
const EwOp kAcosh{OP_ACOSH, "acosh", kToFloat};
const EwOp kAtanh{OP_ATANH, "atanh", kToFloat};
const EwOp kLog10{OP_LOG10, "log10", kToFloat};
const EwOp kErf{OP_ERF, "erf", kToFloat};
const EwOp kErfc{OP_ERFC, "erfc", kToFloat};
const EwOp kErfinv{OP_ERFINV, "erfinv", kToFloat};
const EwOp kLgamma{OP_LGAMMA, "lgamma", kToFloat};
const EwOp kDigamma{OP_DIGAMMA, "digamma", kToFloat};
const EwOp kFrac{.code = OP_FRAC, .name = "frac_cpu", .float_only = true, .out_exact = true};
const EwOp kRoundDecimals{
    .code = OP_ROUND_DECIMALS, .name = "round_cpu", .float_only = true, .out_exact = true};
const EwOp kLogit{OP_LOGIT, "logit", kToFloat};
const EwOp kNanToNum{.code = OP_NAN_TO_NUM, .name = "nan_to_num", .out_exact = true};
const EwOp kSinc{OP_SINC, "sinc", kToFloat};
const EwOp kEntr{OP_ENTR, "special_entr", kToFloat};

VKML_UNARY(abs, kAbs)
VKML_UNARY(sign, kSign)
VKML_UNARY(sqrt, kSqrt)
VKML_UNARY(rsqrt, kRsqrt)
VKML_UNARY(exp, kExp)
VKML_UNARY(exp2, kExp2)
VKML_UNARY(expm1, kExpm1)
VKML_UNARY(log, kLog)
VKML_UNARY(log2, kLog2)
VKML_UNARY(log1p, kLog1p)
VKML_UNARY(sigmoid, kSigmoid)
VKML_UNARY(tanh, kTanh)
VKML_UNARY(reciprocal, kReciprocal)
VKML_UNARY(sin, kSin)
VKML_UNARY(cos, kCos)
VKML_UNARY(floor, kFloor)
VKML_UNARY(ceil, kCeil)
VKML_UNARY(round, kRound)
VKML_UNARY(trunc, kTrunc)
VKML_UNARY(silu, kSilu)
VKML_UNARY(logical_not, kLogicalNot)
VKML_UNARY(tan, kTan)
VKML_UNARY(asin, kAsin)
VKML_UNARY(acos, kAcos)
VKML_UNARY(atan, kAtan)
VKML_UNARY(sinh, kSinh)
VKML_UNARY(cosh, kCosh)
VKML_UNARY(asinh, kAsinh)
VKML_UNARY(acosh, kAcosh)
VKML_UNARY(atanh, kAtanh)
VKML_UNARY(log10, kLog10)
VKML_UNARY(erf, kErf)
VKML_UNARY(erfc, kErfc)
VKML_UNARY(erfinv, kErfinv)
VKML_UNARY(lgamma, kLgamma)
VKML_UNARY(digamma, kDigamma)
VKML_UNARY(frac, kFrac)
VKML_UNARY(sgn, kSgn)
VKML_UNARY(sinc, kSinc)
at::Tensor special_entr(const at::Tensor& a) {
  if (runs_on_cpu(kEntr, {a})) return cpu_route<at::_ops::special_entr>(a);
  return elementwise(kEntr, {a});
}
at::Tensor& special_entr_out(const at::Tensor& a, at::Tensor& out) {
  if (runs_on_cpu(kEntr, {a})) return cpu_route<at::_ops::special_entr_out>(a, out);
  elementwise(kEntr, {a}, out);
  return out;
}

// Boolean tests without an in-place form.
at::Tensor signbit(const at::Tensor& a) { return elementwise(kSignbit, {a}); }
at::Tensor& signbit_out(const at::Tensor& a, at::Tensor& out) {
  elementwise(kSignbit, {a}, out);
  return out;
}
// The CPU's checks and words for isposinf / isneginf.
void check_inf_test(const char* name, const at::Tensor& a, const at::Tensor* out) {
  TORCH_CHECK(!a.is_complex(), name, " does not support complex inputs.");
  TORCH_CHECK(out == nullptr || out->scalar_type() == at::kBool, name,
              " does not support non-boolean outputs.");
}
at::Tensor isposinf(const at::Tensor& a) {
  check_inf_test("isposinf", a, nullptr);
  return elementwise(kIsposinf, {a});
}
at::Tensor& isposinf_out(const at::Tensor& a, at::Tensor& out) {
  check_inf_test("isposinf", a, &out);
  elementwise(kIsposinf, {a}, out);
  return out;
}
at::Tensor isneginf(const at::Tensor& a) {
  check_inf_test("isneginf", a, nullptr);
  return elementwise(kIsneginf, {a});
}
at::Tensor& isneginf_out(const at::Tensor& a, at::Tensor& out) {
  check_inf_test("isneginf", a, &out);
  elementwise(kIsneginf, {a}, out);
  return out;
}

// round(x, decimals): 10^|decimals| in slot 2, rounding a / p * p for decimals < 0.
at::Tensor round_dec_compute(const at::Tensor& a, int64_t decimals, const at::Tensor& out) {
  if (decimals == 0) return elementwise(kRound, {a}, out);
  EwParams p{.s2 = std::pow(10.0, double(decimals < 0 ? -decimals : decimals))};
  if (decimals < 0) p.flags |= EW_PARAM_FLAG;
  return elementwise(kRoundDecimals, {a}, out, p);
}
at::Tensor round_dec(const at::Tensor& a, int64_t decimals) {
  return round_dec_compute(a, decimals, at::Tensor());
}
at::Tensor& round_dec_(at::Tensor& a, int64_t decimals) {
  round_dec_compute(a, decimals, a);
  return a;
}
at::Tensor& round_dec_out(const at::Tensor& a, int64_t decimals, at::Tensor& out) {
  round_dec_compute(a, decimals, out);
  return out;
}

// logit(x, eps): eps < 0 in the kernel means none.
EwParams eps_params(std::optional<double> eps) { return {.fp = {eps.value_or(-1.0)}}; }
at::Tensor logit(const at::Tensor& a, std::optional<double> eps) {
  if (runs_on_cpu(kLogit, {a})) return cpu_route<at::_ops::logit>(a, eps);
  return elementwise(kLogit, {a}, {}, eps_params(eps));
}
at::Tensor& logit_(at::Tensor& a, std::optional<double> eps) {
  if (runs_on_cpu(kLogit, {a})) return cpu_route<at::_ops::logit_>(a, eps);
  elementwise(kLogit, {a}, a, eps_params(eps));
  return a;
}
at::Tensor& logit_out(const at::Tensor& a, std::optional<double> eps, at::Tensor& out) {
  if (runs_on_cpu(kLogit, {a})) return cpu_route<at::_ops::logit_out>(a, eps, out);
  elementwise(kLogit, {a}, out, eps_params(eps));
  return out;
}

// nan_to_num: integers are copied; the infinities default to the dtype's
// largest finite values.
at::Tensor& nan_to_num_out(const at::Tensor& a, std::optional<double> nan,
                           std::optional<double> posinf, std::optional<double> neginf,
                           at::Tensor& out) {
  if (!at::isFloatingType(a.scalar_type())) {
    TORCH_CHECK(out.scalar_type() == a.scalar_type(),
                "nan_to_num: dtype of out: ", out.scalar_type(),
                " should be same as input: ", a.scalar_type());
    if (!a.is_complex()) return write_out(out, a);  // integers and bools are copied
    // Complex: each part on its own, as the CPU's.
    check_out_device(out);
    at::native::resize_output(out, a.sizes());
    at::Tensor parts = at::view_as_real(out);
    nan_to_num_out(at::view_as_real(a.resolve_conj()), nan, posinf, neginf, parts);
    return out;
  }
  if (runs_on_cpu(kNanToNum, {a}))
    return cpu_route<at::_ops::nan_to_num_out>(a, nan, posinf, neginf, out);
  at::ScalarType t = a.scalar_type();
  double big = t == at::kHalf       ? double(std::numeric_limits<c10::Half>::max())
               : t == at::kBFloat16 ? double(std::numeric_limits<c10::BFloat16>::max())
               : t == at::kDouble   ? std::numeric_limits<double>::max()
                                    : double(std::numeric_limits<float>::max());
  elementwise(kNanToNum, {a}, out,
              {.s1 = nan.value_or(0.0), .s2 = posinf.value_or(big), .s0 = neginf.value_or(-big)});
  return out;
}
at::Tensor nan_to_num(const at::Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf) {
  at::Tensor out = at::empty_like(a);
  return nan_to_num_out(a, nan, posinf, neginf, out);
}
at::Tensor& nan_to_num_(at::Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                        std::optional<double> neginf) {
  return nan_to_num_out(a, nan, posinf, neginf, a);
}

// -x and ~x of bools follow PyTorch: negation is an error, ~ is logical not.
const EwOp& neg_op(const at::Tensor& a) {
  VKML_CHECK_NOT_BOOL(
      a.scalar_type() != at::kBool,
      "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
      "to invert a mask, use the `~` or `logical_not()` operator instead.");
  return kNeg;
}
at::Tensor neg(const at::Tensor& a) { return elementwise(neg_op(a), {a}); }
at::Tensor& neg_(at::Tensor& a) {
  elementwise(neg_op(a), {a}, a);
  return a;
}
at::Tensor& neg_out(const at::Tensor& a, at::Tensor& out) {
  elementwise(neg_op(a), {a}, out);
  return out;
}
const EwOp& bitwise_not_op(const at::Tensor& a) {
  return a.scalar_type() == at::kBool ? kLogicalNot : kBitwiseNot;
}
at::Tensor bitwise_not(const at::Tensor& a) {
  at::Tensor r = elementwise(bitwise_not_op(a), {a});
  return r.scalar_type() == a.scalar_type() ? r : r.to(a.scalar_type());
}
at::Tensor& bitwise_not_(at::Tensor& a) {
  elementwise(bitwise_not_op(a), {a}, a);
  return a;
}
at::Tensor& bitwise_not_out(const at::Tensor& a, at::Tensor& out) {
  elementwise(bitwise_not_op(a), {a}, out);
  return out;
}

at::Tensor relu(const at::Tensor& a) { return elementwise(kRelu, {a}); }
at::Tensor& relu_(at::Tensor& a) {
  elementwise(kRelu, {a}, a);
  return a;
}
at::Tensor isnan(const at::Tensor& a) { return elementwise(kIsnan, {a}); }
at::Tensor isinf(const at::Tensor& a) { return elementwise(kIsinf, {a}); }
at::Tensor isfinite(const at::Tensor& a) { return elementwise(kIsfinite, {a}); }

const EwOp& gelu_op(c10::string_view approximate) {
  if (approximate == "tanh") return kGeluTanh;
  TORCH_CHECK(approximate == "none", "approximate argument must be either none or tanh.");
  return kGelu;
}
at::Tensor gelu(const at::Tensor& a, c10::string_view approximate) {
  if (runs_on_cpu(gelu_op(approximate), {a})) return cpu_route<at::_ops::gelu>(a, approximate);
  return elementwise(gelu_op(approximate), {a});
}
at::Tensor& gelu_(at::Tensor& a, c10::string_view approximate) {
  if (runs_on_cpu(gelu_op(approximate), {a})) return cpu_route<at::_ops::gelu_>(a, approximate);
  elementwise(gelu_op(approximate), {a}, a);
  return a;
}
at::Tensor& gelu_out(const at::Tensor& a, c10::string_view approximate, at::Tensor& out) {
  if (runs_on_cpu(gelu_op(approximate), {a}))
    return cpu_route<at::_ops::gelu_out>(a, approximate, out);
  elementwise(gelu_op(approximate), {a}, out);
  return out;
}

// clamp with Scalar bounds: bounds travel in slots 1 and 2; the result type
// promotes with them (clamp(int_tensor, 0.5) is float), as in PyTorch.
EwParams clamp_params(const std::optional<at::Scalar>& lo, const std::optional<at::Scalar>& hi) {
  TORCH_CHECK(lo.has_value() || hi.has_value(),
              "torch.clamp: At least one of 'min' or 'max' must not be None");
  EwParams p{.fits = ScalarFits::Dtype};
  if (lo) p.s1 = *lo, p.flags |= EW_HAS_MIN;
  if (hi) p.s2 = *hi, p.flags |= EW_HAS_MAX;
  return p;
}
at::Tensor clamp_compute(const at::Tensor& a, const std::optional<at::Scalar>& lo,
                         const std::optional<at::Scalar>& hi, const at::Tensor& out) {
  EwParams p = clamp_params(lo, hi);
  at::ScalarType t = a.scalar_type();
  if (lo) t = at::promote_types(t, at::result_type(a, *lo));
  if (hi) t = at::promote_types(t, at::result_type(a, *hi));
  at::Tensor src = a.scalar_type() == t ? a : a.to(t);
  return elementwise(kClamp, {src}, out, p);
}
at::Tensor clamp(const at::Tensor& a, const std::optional<at::Scalar>& lo,
                 const std::optional<at::Scalar>& hi) {
  return clamp_compute(a, lo, hi, at::Tensor());
}
at::Tensor& clamp_(at::Tensor& a, const std::optional<at::Scalar>& lo,
                   const std::optional<at::Scalar>& hi) {
  clamp_compute(a, lo, hi, a);
  return a;
}
at::Tensor& clamp_out(const at::Tensor& a, const std::optional<at::Scalar>& lo,
                      const std::optional<at::Scalar>& hi, at::Tensor& out) {
  clamp_compute(a, lo, hi, out);
  return out;
}
at::Tensor clamp_min(const at::Tensor& a, const at::Scalar& lo) {
  return clamp_compute(a, lo, std::nullopt, at::Tensor());
}
at::Tensor& clamp_min_(at::Tensor& a, const at::Scalar& lo) {
  clamp_compute(a, lo, std::nullopt, a);
  return a;
}
at::Tensor& clamp_min_out(const at::Tensor& a, const at::Scalar& lo, at::Tensor& out) {
  clamp_compute(a, lo, std::nullopt, out);
  return out;
}
at::Tensor clamp_max(const at::Tensor& a, const at::Scalar& hi) {
  return clamp_compute(a, std::nullopt, hi, at::Tensor());
}
at::Tensor& clamp_max_(at::Tensor& a, const at::Scalar& hi) {
  clamp_compute(a, std::nullopt, hi, a);
  return a;
}
at::Tensor& clamp_max_out(const at::Tensor& a, const at::Scalar& hi, at::Tensor& out) {
  clamp_compute(a, std::nullopt, hi, out);
  return out;
}

// clamp with tensor bounds: one bound is maximum/minimum, both a ternary kernel.
at::Tensor clamp_t_compute(const at::Tensor& a, const std::optional<at::Tensor>& lo,
                           const std::optional<at::Tensor>& hi, const at::Tensor& out) {
  bool has_lo = lo.has_value() && lo->defined(), has_hi = hi.has_value() && hi->defined();
  TORCH_CHECK(has_lo || has_hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (has_lo && has_hi) return elementwise(kClampTensor, {a, *lo, *hi}, out);
  if (has_lo)
    return out.defined() ? at::maximum_out(const_cast<at::Tensor&>(out), a, *lo)
                         : at::maximum(a, *lo);
  return out.defined() ? at::minimum_out(const_cast<at::Tensor&>(out), a, *hi)
                       : at::minimum(a, *hi);
}
at::Tensor clamp_t(const at::Tensor& a, const std::optional<at::Tensor>& lo,
                   const std::optional<at::Tensor>& hi) {
  return clamp_t_compute(a, lo, hi, at::Tensor());
}
at::Tensor& clamp_t_(at::Tensor& a, const std::optional<at::Tensor>& lo,
                     const std::optional<at::Tensor>& hi) {
  clamp_t_compute(a, lo, hi, a);
  return a;
}
at::Tensor& clamp_t_out(const at::Tensor& a, const std::optional<at::Tensor>& lo,
                        const std::optional<at::Tensor>& hi, at::Tensor& out) {
  clamp_t_compute(a, lo, hi, out);
  return out;
}

// clamp_min / clamp_max with a tensor bound: maximum / minimum (NaN from either side).
at::Tensor clamp_min_t(const at::Tensor& a, const at::Tensor& lo) {
  return clamp_t_compute(a, lo, std::nullopt, at::Tensor());
}
at::Tensor& clamp_min_t_(at::Tensor& a, const at::Tensor& lo) {
  clamp_t_compute(a, lo, std::nullopt, a);
  return a;
}
at::Tensor& clamp_min_t_out(const at::Tensor& a, const at::Tensor& lo, at::Tensor& out) {
  clamp_t_compute(a, lo, std::nullopt, out);
  return out;
}
at::Tensor clamp_max_t(const at::Tensor& a, const at::Tensor& hi) {
  return clamp_t_compute(a, std::nullopt, hi, at::Tensor());
}
at::Tensor& clamp_max_t_(at::Tensor& a, const at::Tensor& hi) {
  clamp_t_compute(a, std::nullopt, hi, a);
  return a;
}
at::Tensor& clamp_max_t_out(const at::Tensor& a, const at::Tensor& hi, at::Tensor& out) {
  clamp_t_compute(a, std::nullopt, hi, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("clamp_min.Tensor", TORCH_FN(clamp_min_t));
  m.impl("clamp_min_.Tensor", TORCH_FN(clamp_min_t_));
  m.impl("clamp_min.Tensor_out", TORCH_FN(clamp_min_t_out));
  m.impl("clamp_max.Tensor", TORCH_FN(clamp_max_t));
  m.impl("clamp_max_.Tensor", TORCH_FN(clamp_max_t_));
  m.impl("clamp_max.Tensor_out", TORCH_FN(clamp_max_t_out));
  VKML_REGISTER_UNARY(m, "neg", neg);
  VKML_REGISTER_UNARY(m, "abs", abs);
  VKML_REGISTER_UNARY(m, "sign", sign);
  VKML_REGISTER_UNARY(m, "sqrt", sqrt);
  VKML_REGISTER_UNARY(m, "rsqrt", rsqrt);
  VKML_REGISTER_UNARY(m, "exp", exp);
  VKML_REGISTER_UNARY(m, "exp2", exp2);
  VKML_REGISTER_UNARY(m, "expm1", expm1);
  VKML_REGISTER_UNARY(m, "log", log);
  VKML_REGISTER_UNARY(m, "log2", log2);
  VKML_REGISTER_UNARY(m, "log1p", log1p);
  VKML_REGISTER_UNARY(m, "sigmoid", sigmoid);
  VKML_REGISTER_UNARY(m, "tanh", tanh);
  VKML_REGISTER_UNARY(m, "reciprocal", reciprocal);
  VKML_REGISTER_UNARY(m, "sin", sin);
  VKML_REGISTER_UNARY(m, "cos", cos);
  VKML_REGISTER_UNARY(m, "floor", floor);
  VKML_REGISTER_UNARY(m, "ceil", ceil);
  VKML_REGISTER_UNARY(m, "round", round);
  VKML_REGISTER_UNARY(m, "trunc", trunc);
  VKML_REGISTER_UNARY(m, "silu", silu);
  VKML_REGISTER_UNARY(m, "logical_not", logical_not);
  VKML_REGISTER_UNARY(m, "bitwise_not", bitwise_not);
  VKML_REGISTER_UNARY(m, "tan", tan);
  VKML_REGISTER_UNARY(m, "asin", asin);
  VKML_REGISTER_UNARY(m, "acos", acos);
  VKML_REGISTER_UNARY(m, "atan", atan);
  VKML_REGISTER_UNARY(m, "sinh", sinh);
  VKML_REGISTER_UNARY(m, "cosh", cosh);
  VKML_REGISTER_UNARY(m, "asinh", asinh);
  VKML_REGISTER_UNARY(m, "acosh", acosh);
  VKML_REGISTER_UNARY(m, "atanh", atanh);
  VKML_REGISTER_UNARY(m, "log10", log10);
  VKML_REGISTER_UNARY(m, "erf", erf);
  VKML_REGISTER_UNARY(m, "erfc", erfc);
  VKML_REGISTER_UNARY(m, "erfinv", erfinv);
  VKML_REGISTER_UNARY(m, "lgamma", lgamma);
  VKML_REGISTER_UNARY(m, "digamma", digamma);
  VKML_REGISTER_UNARY(m, "frac", frac);
  VKML_REGISTER_UNARY(m, "sgn", sgn);
  VKML_REGISTER_UNARY(m, "sinc", sinc);
  m.impl("special_entr", TORCH_FN(special_entr));
  m.impl("special_entr.out", TORCH_FN(special_entr_out));
  m.impl("signbit", TORCH_FN(signbit));
  m.impl("signbit.out", TORCH_FN(signbit_out));
  m.impl("isposinf", TORCH_FN(isposinf));
  m.impl("isposinf.out", TORCH_FN(isposinf_out));
  m.impl("isneginf", TORCH_FN(isneginf));
  m.impl("isneginf.out", TORCH_FN(isneginf_out));
  m.impl("round.decimals", TORCH_FN(round_dec));
  m.impl("round_.decimals", TORCH_FN(round_dec_));
  m.impl("round.decimals_out", TORCH_FN(round_dec_out));
  m.impl("logit", TORCH_FN(logit));
  m.impl("logit_", TORCH_FN(logit_));
  m.impl("logit.out", TORCH_FN(logit_out));
  m.impl("nan_to_num", TORCH_FN(nan_to_num));
  m.impl("nan_to_num_", TORCH_FN(nan_to_num_));
  m.impl("nan_to_num.out", TORCH_FN(nan_to_num_out));
  m.impl("relu", TORCH_FN(relu));
  m.impl("relu_", TORCH_FN(relu_));
  m.impl("isnan", TORCH_FN(isnan));
  m.impl("isinf", TORCH_FN(isinf));
  m.impl("isfinite", TORCH_FN(isfinite));
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_", TORCH_FN(gelu_));
  m.impl("gelu.out", TORCH_FN(gelu_out));
  m.impl("clamp", TORCH_FN(clamp));
  m.impl("clamp_", TORCH_FN(clamp_));
  m.impl("clamp.out", TORCH_FN(clamp_out));
  m.impl("clamp_min", TORCH_FN(clamp_min));
  m.impl("clamp_min_", TORCH_FN(clamp_min_));
  m.impl("clamp_min.out", TORCH_FN(clamp_min_out));
  m.impl("clamp_max", TORCH_FN(clamp_max));
  m.impl("clamp_max_", TORCH_FN(clamp_max_));
  m.impl("clamp_max.out", TORCH_FN(clamp_max_out));
  m.impl("clamp.Tensor", TORCH_FN(clamp_t));
  m.impl("clamp_.Tensor", TORCH_FN(clamp_t_));
  m.impl("clamp.Tensor_out", TORCH_FN(clamp_t_out));
}

}  // namespace vkml_aten
