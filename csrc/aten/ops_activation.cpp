// Activation functions and their backward kernels (the ones autograd calls):
// hardtanh, leaky_relu, elu, hardswish, hardsigmoid, softplus, soft/hardshrink,
// threshold, mish, log_sigmoid, prelu, glu, rrelu (relu, gelu, silu: ops_unary.cpp).
// elu and softplus take float parameters (packed, see op_codes.h) and compute in
// fp32, or in double for float64 inputs (where the device has it).
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>

#include "elementwise_macros.h"
#include "op_helpers.h"
#include "vkml/shaders/op_codes.h"

namespace vkml_aten {
namespace {

const EwOp kHardtanh{OP_CLAMP, "hardtanh"};
const EwOp kHardtanhBackward{OP_HARDTANH_BACKWARD, "hardtanh_backward"};
const EwOp kLeakyRelu{OP_LEAKY_RELU, "leaky_relu", ResultType::Promote, true};
const EwOp kLeakyReluBackward{OP_LEAKY_RELU_BACKWARD, "leaky_relu_backward"};
const EwOp kElu{OP_ELU, "elu", ResultType::Promote, true};
const EwOp kEluBackward{OP_ELU_BACKWARD, "elu_backward"};
const EwOp kHardswish{OP_HARDSWISH, "hardswish", ResultType::Promote, true};
const EwOp kHardswishBackward{OP_HARDSWISH_BACKWARD, "hardswish_backward"};
const EwOp kHardsigmoid{OP_HARDSIGMOID, "hardsigmoid", ResultType::Promote, true};
const EwOp kHardsigmoidBackward{OP_HARDSIGMOID_BACKWARD, "hardsigmoid_backward"};
const EwOp kSoftplus{
    .code = OP_SOFTPLUS, .name = "softplus", .float_only = true, .out_exact = true};
const EwOp kSoftplusBackward{OP_SOFTPLUS_BACKWARD, "softplus_backward"};
const EwOp kSoftshrink{
    .code = OP_SOFTSHRINK, .name = "softshrink", .float_only = true, .out_exact = true};
const EwOp kHardshrink{
    .code = OP_HARDSHRINK, .name = "hardshrink", .float_only = true, .out_exact = true};
const EwOp kShrinkBackward{OP_SHRINK_BACKWARD, "shrink_backward"};
const EwOp kThreshold{OP_THRESHOLD, "threshold"};
const EwOp kMish{OP_MISH, "mish", ResultType::Promote, true};
const EwOp kMishBackward{OP_MISH_BACKWARD, "mish_backward"};
const EwOp kLogSigmoid{
    .code = OP_LOG_SIGMOID, .name = "log_sigmoid", .float_only = true, .out_exact = true};
const EwOp kLogSigmoidBackward{OP_LOG_SIGMOID_BACKWARD, "log_sigmoid_backward"};
const EwOp kPrelu{OP_PRELU, "prelu"};
const EwOp kPreluBackwardInput{OP_PRELU_BACKWARD_INPUT, "prelu_backward"};
const EwOp kPreluBackwardWeight{OP_PRELU_BACKWARD_WEIGHT, "prelu_backward"};
const EwOp kGlu{OP_GLU, "glu", ResultType::Promote, true};
const EwOp kGluBackwardA{OP_GLU_BACKWARD_A, "glu_backward"};
const EwOp kGluBackwardB{OP_GLU_BACKWARD_B, "glu_backward"};

// ------------------------------------------------------------- hardtanh
// hardtanh is clamp; its backward zeroes the gradient at and beyond the bounds.
at::Tensor& hardtanh_out(const at::Tensor& a, const at::Scalar& lo, const at::Scalar& hi,
                         at::Tensor& out) {
  VKML_CHECK_NOT_BOOL(a.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  elementwise(kHardtanh, {a}, out,
              {.s1 = lo, .s2 = hi, .flags = EW_HAS_MIN | EW_HAS_MAX, .fits = ScalarFits::Dtype});
  return out;
}
at::Tensor hardtanh(const at::Tensor& a, const at::Scalar& lo, const at::Scalar& hi) {
  VKML_CHECK_NOT_BOOL(a.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  return elementwise(
      kHardtanh, {a}, {},
      {.s1 = lo, .s2 = hi, .flags = EW_HAS_MIN | EW_HAS_MAX, .fits = ScalarFits::Dtype});
}
at::Tensor& hardtanh_(at::Tensor& a, const at::Scalar& lo, const at::Scalar& hi) {
  return hardtanh_out(a, lo, hi, a);
}
at::Tensor& hardtanh_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                  const at::Scalar& lo, const at::Scalar& hi,
                                  at::Tensor& grad_input) {
  elementwise(kHardtanhBackward, {grad, self}, grad_input, {.s2 = lo, .s0 = hi});
  return grad_input;
}
at::Tensor hardtanh_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& lo,
                             const at::Scalar& hi) {
  return elementwise(kHardtanhBackward, {grad, self}, {}, {.s2 = lo, .s0 = hi});
}

// ----------------------------------------------------------- leaky_relu
at::Tensor& leaky_relu_out(const at::Tensor& a, const at::Scalar& slope, at::Tensor& out) {
  if (runs_on_cpu(kLeakyRelu, {a})) return cpu_route<at::_ops::leaky_relu_out>(a, slope, out);
  elementwise(kLeakyRelu, {a}, out, {.s2 = slope});
  return out;
}
at::Tensor leaky_relu(const at::Tensor& a, const at::Scalar& slope) {
  if (runs_on_cpu(kLeakyRelu, {a})) return cpu_route<at::_ops::leaky_relu>(a, slope);
  return elementwise(kLeakyRelu, {a}, {}, {.s2 = slope});
}
at::Tensor& leaky_relu_(at::Tensor& a, const at::Scalar& slope) {
  if (runs_on_cpu(kLeakyRelu, {a})) return cpu_route<at::_ops::leaky_relu_>(a, slope);
  return leaky_relu_out(a, slope, a);
}
void check_leaky_relu_backward(const at::Scalar& slope, bool self_is_result) {
  TORCH_CHECK(!self_is_result || slope.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which "
              "is not supported. This is caused by calling in-place forward function with a "
              "negative slope, please call out-of-place version instead. File an issue at "
              "https://github.com/pytorch/pytorch if you do require supporting in-place "
              "leakRelu backward calculation with negative slope");
}
at::Tensor& leaky_relu_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                    const at::Scalar& slope, bool self_is_result,
                                    at::Tensor& grad_input) {
  check_leaky_relu_backward(slope, self_is_result);
  if (runs_on_cpu(kLeakyReluBackward, {grad, self}))
    return cpu_route<at::_ops::leaky_relu_backward_grad_input>(grad, self, slope, self_is_result,
                                                               grad_input);
  elementwise(kLeakyReluBackward, {grad, self}, grad_input, {.s2 = slope});
  return grad_input;
}
at::Tensor leaky_relu_backward(const at::Tensor& grad, const at::Tensor& self,
                               const at::Scalar& slope, bool self_is_result) {
  check_leaky_relu_backward(slope, self_is_result);
  if (runs_on_cpu(kLeakyReluBackward, {grad, self}))
    return cpu_route<at::_ops::leaky_relu_backward>(grad, self, slope, self_is_result);
  return elementwise(kLeakyReluBackward, {grad, self}, {}, {.s2 = slope});
}

// ------------------------------------------------------------------ elu
// fparams: alpha * scale (negative side), scale (positive side), input_scale.
EwParams elu_params(const at::Scalar& alpha, const at::Scalar& scale,
                    const at::Scalar& input_scale) {
  return {.fp = {alpha.toDouble() * scale.toDouble(), scale.toDouble(), input_scale.toDouble()}};
}
at::Tensor& elu_out(const at::Tensor& a, const at::Scalar& alpha, const at::Scalar& scale,
                    const at::Scalar& input_scale, at::Tensor& out) {
  if (runs_on_cpu(kElu, {a}))
    return cpu_route<at::_ops::elu_out>(a, alpha, scale, input_scale, out);
  elementwise(kElu, {a}, out, elu_params(alpha, scale, input_scale));
  return out;
}
at::Tensor elu(const at::Tensor& a, const at::Scalar& alpha, const at::Scalar& scale,
               const at::Scalar& input_scale) {
  if (runs_on_cpu(kElu, {a})) return cpu_route<at::_ops::elu>(a, alpha, scale, input_scale);
  return elementwise(kElu, {a}, {}, elu_params(alpha, scale, input_scale));
}
at::Tensor& elu_(at::Tensor& a, const at::Scalar& alpha, const at::Scalar& scale,
                 const at::Scalar& input_scale) {
  if (runs_on_cpu(kElu, {a})) return cpu_route<at::_ops::elu_>(a, alpha, scale, input_scale);
  return elu_out(a, alpha, scale, input_scale, a);
}
at::Tensor elu_backward_compute(const at::Tensor& grad, const at::Scalar& alpha,
                                const at::Scalar& scale, const at::Scalar& input_scale,
                                bool is_result, const at::Tensor& self_or_result,
                                const at::Tensor& out) {
  TORCH_CHECK(!is_result || alpha.to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not "
              "supported. This is caused by calling in-place forward function with a negative "
              "slope, please call out-of-place version instead.");
  EwParams p = elu_params(alpha, scale, input_scale);
  if (is_result) p.flags |= EW_PARAM_FLAG;
  return elementwise(kEluBackward, {grad, self_or_result}, out, p);
}
at::Tensor& elu_backward_out(const at::Tensor& grad, const at::Scalar& alpha,
                             const at::Scalar& scale, const at::Scalar& input_scale, bool is_result,
                             const at::Tensor& self_or_result, at::Tensor& grad_input) {
  if (runs_on_cpu(kEluBackward, {grad, self_or_result}))
    return cpu_route<at::_ops::elu_backward_grad_input>(grad, alpha, scale, input_scale, is_result,
                                                        self_or_result, grad_input);
  elu_backward_compute(grad, alpha, scale, input_scale, is_result, self_or_result, grad_input);
  return grad_input;
}
at::Tensor elu_backward(const at::Tensor& grad, const at::Scalar& alpha, const at::Scalar& scale,
                        const at::Scalar& input_scale, bool is_result,
                        const at::Tensor& self_or_result) {
  if (runs_on_cpu(kEluBackward, {grad, self_or_result}))
    return cpu_route<at::_ops::elu_backward>(grad, alpha, scale, input_scale, is_result,
                                             self_or_result);
  return elu_backward_compute(grad, alpha, scale, input_scale, is_result, self_or_result,
                              at::Tensor());
}

// ------------------------------------------- hardswish / hardsigmoid
// Piecewise linear: native in float64 too.
at::Tensor hardswish(const at::Tensor& a) { return elementwise(kHardswish, {a}); }
at::Tensor& hardswish_(at::Tensor& a) {
  elementwise(kHardswish, {a}, a);
  return a;
}
at::Tensor& hardswish_out(const at::Tensor& a, at::Tensor& out) {
  elementwise(kHardswish, {a}, out);
  return out;
}
at::Tensor hardswish_backward(const at::Tensor& grad, const at::Tensor& self) {
  return elementwise(kHardswishBackward, {grad, self});
}
at::Tensor& hardswish_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                   at::Tensor& out) {
  elementwise(kHardswishBackward, {grad, self}, out);
  return out;
}
at::Tensor hardsigmoid(const at::Tensor& a) { return elementwise(kHardsigmoid, {a}); }
at::Tensor& hardsigmoid_(at::Tensor& a) {
  elementwise(kHardsigmoid, {a}, a);
  return a;
}
at::Tensor& hardsigmoid_out(const at::Tensor& a, at::Tensor& out) {
  elementwise(kHardsigmoid, {a}, out);
  return out;
}
at::Tensor hardsigmoid_backward(const at::Tensor& grad, const at::Tensor& self) {
  return elementwise(kHardsigmoidBackward, {grad, self});
}
at::Tensor& hardsigmoid_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                     at::Tensor& out) {
  elementwise(kHardsigmoidBackward, {grad, self}, out);
  return out;
}

// ------------------------------------------------------------- softplus
at::Tensor& softplus_out(const at::Tensor& a, const at::Scalar& beta, const at::Scalar& threshold,
                         at::Tensor& out) {
  if (runs_on_cpu(kSoftplus, {a}))
    return cpu_route<at::_ops::softplus_out>(a, beta, threshold, out);
  elementwise(kSoftplus, {a}, out, {.fp = {beta.toDouble(), threshold.toDouble()}});
  return out;
}
at::Tensor softplus(const at::Tensor& a, const at::Scalar& beta, const at::Scalar& threshold) {
  if (runs_on_cpu(kSoftplus, {a})) return cpu_route<at::_ops::softplus>(a, beta, threshold);
  return elementwise(kSoftplus, {a}, {}, {.fp = {beta.toDouble(), threshold.toDouble()}});
}
at::Tensor& softplus_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                  const at::Scalar& beta, const at::Scalar& threshold,
                                  at::Tensor& grad_input) {
  if (runs_on_cpu(kSoftplusBackward, {grad, self}))
    return cpu_route<at::_ops::softplus_backward_grad_input>(grad, self, beta, threshold,
                                                             grad_input);
  elementwise(kSoftplusBackward, {grad, self}, grad_input,
              {.fp = {beta.toDouble(), threshold.toDouble()}});
  return grad_input;
}
at::Tensor softplus_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& beta,
                             const at::Scalar& threshold) {
  if (runs_on_cpu(kSoftplusBackward, {grad, self}))
    return cpu_route<at::_ops::softplus_backward>(grad, self, beta, threshold);
  return elementwise(kSoftplusBackward, {grad, self}, {},
                     {.fp = {beta.toDouble(), threshold.toDouble()}});
}

// -------------------------------------------------- softshrink / hardshrink
void check_lambda(const at::Scalar& lambd) {
  TORCH_CHECK(lambd.toDouble() >= 0, "lambda must be greater or equal to 0, but found to be ",
              lambd.toDouble(), ".");
}
at::Tensor& softshrink_out(const at::Tensor& a, const at::Scalar& lambd, at::Tensor& out) {
  check_lambda(lambd);
  if (runs_on_cpu(kSoftshrink, {a})) return cpu_route<at::_ops::softshrink_out>(a, lambd, out);
  elementwise(kSoftshrink, {a}, out, {.s2 = lambd});
  return out;
}
at::Tensor softshrink(const at::Tensor& a, const at::Scalar& lambd) {
  check_lambda(lambd);
  if (runs_on_cpu(kSoftshrink, {a})) return cpu_route<at::_ops::softshrink>(a, lambd);
  return elementwise(kSoftshrink, {a}, {}, {.s2 = lambd});
}
at::Tensor& hardshrink_out(const at::Tensor& a, const at::Scalar& lambd, at::Tensor& out) {
  if (runs_on_cpu(kHardshrink, {a})) return cpu_route<at::_ops::hardshrink_out>(a, lambd, out);
  elementwise(kHardshrink, {a}, out, {.s2 = lambd});
  return out;
}
at::Tensor hardshrink(const at::Tensor& a, const at::Scalar& lambd) {
  if (runs_on_cpu(kHardshrink, {a})) return cpu_route<at::_ops::hardshrink>(a, lambd);
  return elementwise(kHardshrink, {a}, {}, {.s2 = lambd});
}
at::Tensor& softshrink_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                    const at::Scalar& lambd, at::Tensor& grad_input) {
  if (runs_on_cpu(kShrinkBackward, {grad, self}))
    return cpu_route<at::_ops::softshrink_backward_grad_input>(grad, self, lambd, grad_input);
  elementwise(kShrinkBackward, {grad, self}, grad_input, {.s2 = lambd});
  return grad_input;
}
at::Tensor softshrink_backward(const at::Tensor& grad, const at::Tensor& self,
                               const at::Scalar& lambd) {
  if (runs_on_cpu(kShrinkBackward, {grad, self}))
    return cpu_route<at::_ops::softshrink_backward>(grad, self, lambd);
  return elementwise(kShrinkBackward, {grad, self}, {}, {.s2 = lambd});
}
at::Tensor& hardshrink_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                    const at::Scalar& lambd, at::Tensor& grad_input) {
  if (runs_on_cpu(kShrinkBackward, {grad, self}))
    return cpu_route<at::_ops::hardshrink_backward_grad_input>(grad, self, lambd, grad_input);
  elementwise(kShrinkBackward, {grad, self}, grad_input, {.s2 = lambd});
  return grad_input;
}
at::Tensor hardshrink_backward(const at::Tensor& grad, const at::Tensor& self,
                               const at::Scalar& lambd) {
  if (runs_on_cpu(kShrinkBackward, {grad, self}))
    return cpu_route<at::_ops::hardshrink_backward>(grad, self, lambd);
  return elementwise(kShrinkBackward, {grad, self}, {}, {.s2 = lambd});
}

// ------------------------------------------------------------ threshold
// x <= threshold ? value : x, in the input's dtype (integers too).
at::Tensor& threshold_out(const at::Tensor& a, const at::Scalar& th, const at::Scalar& value,
                          at::Tensor& out) {
  elementwise(kThreshold, {a}, out, {.s2 = th, .s0 = value, .fits = ScalarFits::Dtype});
  return out;
}
at::Tensor threshold(const at::Tensor& a, const at::Scalar& th, const at::Scalar& value) {
  return elementwise(kThreshold, {a}, {}, {.s2 = th, .s0 = value, .fits = ScalarFits::Dtype});
}
at::Tensor& threshold_(at::Tensor& a, const at::Scalar& th, const at::Scalar& value) {
  return threshold_out(a, th, value, a);
}

// ----------------------------------------------------------------- mish
at::Tensor mish(const at::Tensor& a) {
  if (runs_on_cpu(kMish, {a})) return cpu_route<at::_ops::mish>(a);
  return elementwise(kMish, {a});
}
at::Tensor& mish_(at::Tensor& a) {
  if (runs_on_cpu(kMish, {a})) return cpu_route<at::_ops::mish_>(a);
  elementwise(kMish, {a}, a);
  return a;
}
at::Tensor& mish_out(const at::Tensor& a, at::Tensor& out) {
  if (runs_on_cpu(kMish, {a})) return cpu_route<at::_ops::mish_out>(a, out);
  elementwise(kMish, {a}, out);
  return out;
}
at::Tensor mish_backward(const at::Tensor& grad, const at::Tensor& self) {
  if (runs_on_cpu(kMishBackward, {grad, self}))
    return cpu_route<at::_ops::mish_backward>(grad, self);
  return elementwise(kMishBackward, {grad, self});
}

// ---------------------------------------------------------- log_sigmoid
// The buffer is empty, as on CUDA: the backward recomputes exp(-|x|).
std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& a, at::Tensor& out,
                                                             at::Tensor& buffer) {
  if (runs_on_cpu(kLogSigmoid, {a}))
    return cpu_route<at::_ops::log_sigmoid_forward_output>(a, out, buffer);
  elementwise(kLogSigmoid, {a}, out);
  at::native::resize_output(buffer, {0});
  return {out, buffer};
}
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& a) {
  if (runs_on_cpu(kLogSigmoid, {a})) return cpu_route<at::_ops::log_sigmoid_forward>(a);
  return {elementwise(kLogSigmoid, {a}), at::empty({0}, a.options())};
}
at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                     const at::Tensor& buffer, at::Tensor& grad_input) {
  if (runs_on_cpu(kLogSigmoidBackward, {grad, self}))
    return cpu_route<at::_ops::log_sigmoid_backward_grad_input>(grad, self, buffer, grad_input);
  elementwise(kLogSigmoidBackward, {grad, self}, grad_input);
  return grad_input;
}
at::Tensor log_sigmoid_backward(const at::Tensor& grad, const at::Tensor& self,
                                const at::Tensor& buffer) {
  if (runs_on_cpu(kLogSigmoidBackward, {grad, self}))
    return cpu_route<at::_ops::log_sigmoid_backward>(grad, self, buffer);
  return elementwise(kLogSigmoidBackward, {grad, self});
}

// ---------------------------------------------------------------- prelu
// Both gradients have the broadcast shape; autograd reduces grad_weight.
at::Tensor prelu_kernel(const at::Tensor& a, const at::Tensor& w) {
  return elementwise(kPrelu, {a, w});
}
std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad,
                                                         const at::Tensor& self,
                                                         const at::Tensor& w) {
  at::Tensor gi = elementwise(kPreluBackwardInput, {grad, self, w});
  at::Tensor gw = elementwise(kPreluBackwardWeight, {grad, self, w});
  if (gi.scalar_type() != self.scalar_type()) gi = gi.to(self.scalar_type());
  if (gw.scalar_type() != w.scalar_type()) gw = gw.to(w.scalar_type());
  return {gi, gw};
}

// ------------------------------------------------------------------ glu
// glu(x) = a * sigmoid(b) for the halves a, b of x along dim.
int64_t glu_dim(const at::Tensor& a, int64_t dim) {
  TORCH_CHECK(a.dim() > 0, "glu does not support scalars because halving size must be even");
  int64_t d = at::maybe_wrap_dim(dim, a.dim());
  TORCH_CHECK(a.size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ",
              a.size(d));
  return d;
}
at::Tensor& glu_out(const at::Tensor& a, int64_t dim, at::Tensor& out) {
  int64_t d = glu_dim(a, dim);
  if (runs_on_cpu(kGlu, {a})) return cpu_route<at::_ops::glu_out>(a, dim, out);
  int64_t half = a.size(d) / 2;
  elementwise(kGlu, {a.narrow(d, 0, half), a.narrow(d, half, half)}, out);
  return out;
}
at::Tensor glu(const at::Tensor& a, int64_t dim) {
  int64_t d = glu_dim(a, dim);
  if (runs_on_cpu(kGlu, {a})) return cpu_route<at::_ops::glu>(a, dim);
  int64_t half = a.size(d) / 2;
  return elementwise(kGlu, {a.narrow(d, 0, half), a.narrow(d, half, half)});
}
at::Tensor& glu_backward_out(const at::Tensor& grad, const at::Tensor& a, int64_t dim,
                             at::Tensor& grad_input) {
  int64_t d = glu_dim(a, dim);
  if (runs_on_cpu(kGluBackwardA, {grad, a}))
    return cpu_route<at::_ops::glu_backward_grad_input>(grad, a, dim, grad_input);
  int64_t half = a.size(d) / 2;
  at::Tensor first = a.narrow(d, 0, half), gate = a.narrow(d, half, half);
  at::native::resize_output(grad_input, a.sizes());
  at::Tensor gi_first = grad_input.narrow(d, 0, half);
  at::Tensor gi_gate = grad_input.narrow(d, half, half);
  elementwise(kGluBackwardA, {grad, gate}, gi_first);
  elementwise(kGluBackwardB, {grad, first, gate}, gi_gate);
  return grad_input;
}
at::Tensor glu_backward(const at::Tensor& grad, const at::Tensor& a, int64_t dim) {
  if (runs_on_cpu(kGluBackwardA, {grad, a})) return cpu_route<at::_ops::glu_backward>(grad, a, dim);
  at::Tensor grad_input = at::empty(a.sizes(), a.options());
  return glu_backward_out(grad, a, dim, grad_input);
}

// ------------------------------------------------------------------ rrelu
// Training draws each negative element's slope from U(lower, upper) with the
// device generator (noise keeps the slopes, 1 for the others, for the backward);
// evaluation is leaky_relu with the mean slope, as on the CPU.
at::Tensor rrelu_noise(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                       const at::Scalar& upper, bool training,
                       std::optional<at::Generator> generator) {
  TORCH_CHECK(lower.toDouble() <= upper.toDouble(),
              "Lower bound should be less than or equal to "
              "the upper bound");
  if (!training) return at::leaky_relu(self, (lower.toDouble() + upper.toDouble()) / 2);
  at::native::resize_output(noise, self.sizes());
  noise.uniform_(lower.toDouble(), upper.toDouble(), generator);
  noise.masked_fill_(self > 0, 1);
  return self * noise;
}
at::Tensor& rrelu_noise_out(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                            const at::Scalar& upper, bool training,
                            std::optional<at::Generator> generator, at::Tensor& out) {
  at::Tensor r = rrelu_noise(self, noise, lower, upper, training, generator);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}
at::Tensor& rrelu_noise_(at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                         const at::Scalar& upper, bool training,
                         std::optional<at::Generator> generator) {
  return self.copy_(rrelu_noise(self, noise, lower, upper, training, generator));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("hardtanh", TORCH_FN(hardtanh));
  m.impl("hardtanh_", TORCH_FN(hardtanh_));
  m.impl("hardtanh.out", TORCH_FN(hardtanh_out));
  m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward));
  m.impl("hardtanh_backward.grad_input", TORCH_FN(hardtanh_backward_out));
  m.impl("leaky_relu", TORCH_FN(leaky_relu));
  m.impl("leaky_relu_", TORCH_FN(leaky_relu_));
  m.impl("leaky_relu.out", TORCH_FN(leaky_relu_out));
  m.impl("leaky_relu_backward", TORCH_FN(leaky_relu_backward));
  m.impl("leaky_relu_backward.grad_input", TORCH_FN(leaky_relu_backward_out));
  m.impl("elu", TORCH_FN(elu));
  m.impl("elu_", TORCH_FN(elu_));
  m.impl("elu.out", TORCH_FN(elu_out));
  m.impl("elu_backward", TORCH_FN(elu_backward));
  m.impl("elu_backward.grad_input", TORCH_FN(elu_backward_out));
  m.impl("hardswish", TORCH_FN(hardswish));
  m.impl("hardswish_", TORCH_FN(hardswish_));
  m.impl("hardswish.out", TORCH_FN(hardswish_out));
  m.impl("hardswish_backward", TORCH_FN(hardswish_backward));
  m.impl("hardswish_backward.out", TORCH_FN(hardswish_backward_out));
  m.impl("hardsigmoid", TORCH_FN(hardsigmoid));
  m.impl("hardsigmoid_", TORCH_FN(hardsigmoid_));
  m.impl("hardsigmoid.out", TORCH_FN(hardsigmoid_out));
  m.impl("hardsigmoid_backward", TORCH_FN(hardsigmoid_backward));
  m.impl("hardsigmoid_backward.grad_input", TORCH_FN(hardsigmoid_backward_out));
  m.impl("softplus", TORCH_FN(softplus));
  m.impl("softplus.out", TORCH_FN(softplus_out));
  m.impl("softplus_backward", TORCH_FN(softplus_backward));
  m.impl("softplus_backward.grad_input", TORCH_FN(softplus_backward_out));
  m.impl("softshrink", TORCH_FN(softshrink));
  m.impl("softshrink.out", TORCH_FN(softshrink_out));
  m.impl("softshrink_backward", TORCH_FN(softshrink_backward));
  m.impl("softshrink_backward.grad_input", TORCH_FN(softshrink_backward_out));
  m.impl("hardshrink", TORCH_FN(hardshrink));
  m.impl("hardshrink.out", TORCH_FN(hardshrink_out));
  m.impl("hardshrink_backward", TORCH_FN(hardshrink_backward));
  m.impl("hardshrink_backward.grad_input", TORCH_FN(hardshrink_backward_out));
  m.impl("threshold", TORCH_FN(threshold));
  m.impl("threshold_", TORCH_FN(threshold_));
  m.impl("threshold.out", TORCH_FN(threshold_out));
  m.impl("mish", TORCH_FN(mish));
  m.impl("mish_", TORCH_FN(mish_));
  m.impl("mish.out", TORCH_FN(mish_out));
  m.impl("mish_backward", TORCH_FN(mish_backward));
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  m.impl("log_sigmoid_forward.output", TORCH_FN(log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(log_sigmoid_backward_out));
  m.impl("_prelu_kernel", TORCH_FN(prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));
  m.impl("glu", TORCH_FN(glu));
  m.impl("glu.out", TORCH_FN(glu_out));
  m.impl("glu_backward", TORCH_FN(glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(glu_backward_out));
  m.impl("rrelu_with_noise", TORCH_FN(rrelu_noise));
  m.impl("rrelu_with_noise.out", TORCH_FN(rrelu_noise_out));
  m.impl("rrelu_with_noise_", TORCH_FN(rrelu_noise_));
}

}  // namespace vkml_aten
