// Complex elementwise math and matrix products. Arithmetic (add, sub, mul, neg, abs, angle,
// sgn, where, comparisons, predicates, logical ops, addcmul / addcdiv / lerp), products and
// scans compose native float kernels on the tensors' float views (at::view_as_real: [..., 2]
// pairs of re, im). The transcendental functions, pow and division of complex64 run the
// complex kernels of vkml/ops/complex.h; complex128 ones take the counted CPU route.
#include "aten/composite/complex.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>

#include <string>

#include "aten/op_helpers.h"
#include "aten/vkml_tensor.h"
#include "vkml/ops/complex.h"
#include "vkml/shaders/op_codes.h"

namespace vkml_aten {
namespace {

// a as a complex tensor of `type` broadcast to `shape`, materialized only if needed
// (a CPU scalar, a real tensor, another complex dtype or a conjugated view).
at::Tensor as_complex(const at::Tensor& a, at::ScalarType type, at::IntArrayRef shape,
                      const at::Device& device) {
  at::Tensor t = a.to(device, type).resolve_conj().resolve_neg();
  return t.expand(shape);
}

// (re, im) of a complex tensor: views into its float pairs.
struct Parts {
  at::Tensor re, im;
};
Parts parts(const at::Tensor& c) {
  at::Tensor f = at::view_as_real(c);
  return {f.select(-1, 0), f.select(-1, 1)};
}

at::Tensor result_of(const at::Tensor& re, const at::Tensor& im) {
  return at::view_as_complex(at::stack({re, im}, -1));
}

// a / b by Smith's method, as the CPU divides: scaled by the larger part of b, so that
// neither |b|^2 nor the products overflow or underflow where the quotient does not.
at::Tensor smith_division(const Parts& a, const Parts& b) {
  const at::Tensor re_larger = b.re.abs() >= b.im.abs();
  const at::Tensor both_zero = at::logical_and(b.re.eq(0), b.im.eq(0));
  // |b.re| >= |b.im|: r = b.im / b.re; else r = b.re / b.im.
  const at::Tensor r1 = b.im / b.re, s1 = (b.re + b.im * r1).reciprocal();
  const at::Tensor r2 = b.re / b.im, s2 = (b.im + b.re * r2).reciprocal();
  at::Tensor re1 = (a.re + a.im * r1) * s1, im1 = (a.im - a.re * r1) * s1;
  // A zero divisor: an infinity or a NaN per part, as the CPU's.
  re1 = at::where(both_zero, a.re / b.re.abs(), re1);
  im1 = at::where(both_zero, a.im / b.im.abs(), im1);
  const at::Tensor re2 = (a.re * r2 + a.im) * s2, im2 = (a.im * r2 - a.re) * s2;
  return result_of(at::where(re_larger, re1, re2), at::where(re_larger, im1, im2));
}

// Whether an element is nonzero (either part), as logical ops read complex values.
at::Tensor nonzero_of(const at::Tensor& c) {
  Parts z = parts(c);
  return at::logical_or(z.re.ne(0), z.im.ne(0));
}

// One complex64 kernel of vkml/ops/complex.h over in[0] (and in[1]: pow's exponent,
// div's divisor), broadcast to `shape`. A CPU scalar second operand goes by value.
at::Tensor complex_kernel(int code, const std::vector<at::Tensor>& in, at::IntArrayRef shape,
                          const at::Device& device) {
  at::Tensor z = as_complex(in[0], at::kComplexFloat, shape, device).contiguous();
  at::Tensor out = at::empty(shape, z.options());
  vkml::ops::ComplexMath m;
  m.op = code;
  m.numel = out.numel();
  at::Tensor w;
  if (in.size() > 1 && in[1].defined()) {
    if (in[1].device().is_cpu() && in[1].dim() == 0) {
      const c10::complex<double> v = in[1].item().toComplexDouble();
      m.w_scalar[0] = float(v.real());
      m.w_scalar[1] = float(v.imag());
    } else {
      w = as_complex(in[1], at::kComplexFloat, shape, device).contiguous();
      m.w = addr(w);
    }
  }
  m.out = addr(out);
  m.z = addr(z);
  guarded([&] { vkml::ops::complex_math(vkml_device(out), m); });
  return out;
}

// pow by a real scalar exponent PyTorch's CPU kernel computes exactly (ones, products,
// square roots, reciprocals), or -1 for the general exp(w log z).
int pow_special_case(const at::Tensor& w) {
  if (!(w.device().is_cpu() && w.dim() == 0)) return -1;
  const c10::complex<double> v = w.item().toComplexDouble();
  if (v.imag() != 0) return -1;
  const double e = v.real();
  if (e == 0) return OP_IDENTITY;  // ones, as ATen's pow by a scalar 0
  if (e == 0.5) return OP_SQRT;
  if (e == -0.5) return OP_RSQRT;
  if (e == -1) return OP_RECIPROCAL;
  if (e == 2 || e == 3 || e == -2) return OP_MUL;
  return -1;
}

}  // namespace

bool complex_op_supported(int code, at::ScalarType type) {
  if (code == OP_TANH_BACKWARD || code == OP_SIGMOID_BACKWARD) return true;
  if (code == OP_ADD || code == OP_SUB || code == OP_MUL || code == OP_DIV || code == OP_NEG ||
      code == OP_ABS || code == OP_ANGLE || code == OP_WHERE || code == OP_EQ || code == OP_NE ||
      code == OP_SIGN || code == OP_ISNAN || code == OP_ISINF || code == OP_ISFINITE ||
      code == OP_LOGICAL_NOT || code == OP_LOGICAL_AND || code == OP_LOGICAL_OR ||
      code == OP_LOGICAL_XOR || code == OP_ADDCMUL || code == OP_ADDCDIV ||
      code == OP_LERP_SCALAR || code == OP_LERP_TENSOR)
    return true;
  return type == at::kComplexFloat && vkml::ops::complex_math_has_op(code);
}

at::Tensor complex_elementwise(int code, const char* name, const std::vector<at::Tensor>& in,
                               const at::Tensor& out, const std::optional<at::Scalar>& alpha,
                               at::ScalarType type, const at::Device& device) {
  // The CPU's words: these have no complex order.
  TORCH_CHECK(code != OP_MAXIMUM && code != OP_MINIMUM && code != OP_FMAX && code != OP_FMIN, name,
              " not implemented for complex tensors.");
  TORCH_CHECK_NOT_IMPLEMENTED(complex_op_supported(code, type), name, " on vkml does not support ",
                              type, " tensors yet");
  std::vector<at::Tensor> defined;
  for (const auto& t : in)
    if (t.defined()) defined.push_back(t);
  std::vector<int64_t> shape;
  if (defined.size() == 1) {
    shape = defined[0].sizes().vec();
  } else {
    shape = at::infer_size(defined[0].sizes(), defined[1].sizes());
  }
  at::Tensor result;
  const int special = code == OP_POW ? pow_special_case(in[1]) : -1;
  if (code == OP_ADDCMUL || code == OP_ADDCDIV || code == OP_LERP_SCALAR ||
      code == OP_LERP_TENSOR) {
    // a + v t1 t2, a + v t1 / t2, a + w (end - a): composed of the ops above.
    auto call = [&](int c, std::vector<at::Tensor> args) {
      return complex_elementwise(c, name, args, at::Tensor(), {}, type, device);
    };
    auto scalar = [&](const at::Scalar& v) {
      return at::scalar_tensor(v, at::TensorOptions().dtype(at::kComplexDouble));
    };
    const at::Scalar v = alpha.value_or(at::Scalar(1));
    at::Tensor step;
    if (code == OP_ADDCMUL || code == OP_ADDCDIV)
      step = call(OP_MUL, {call(code == OP_ADDCMUL ? OP_MUL : OP_DIV, {in[1], in[2]}), scalar(v)});
    else
      step =
          call(OP_MUL, {call(OP_SUB, {in[1], in[0]}), code == OP_LERP_TENSOR ? in[2] : scalar(v)});
    result = call(OP_ADD, {in[0], step});
  } else if (code == OP_TANH_BACKWARD || code == OP_SIGMOID_BACKWARD) {
    // grad * conj(dy/dx) from the forward's result y: 1 - y^2, or y (1 - y).
    auto call = [&](int c, std::vector<at::Tensor> args) {
      return complex_elementwise(c, name, args, at::Tensor(), {}, type, device);
    };
    const at::Tensor y = as_complex(in[1], type, shape, device);
    const at::Tensor one = at::ones({}, at::TensorOptions().dtype(type));
    const at::Tensor d = code == OP_TANH_BACKWARD ? call(OP_SUB, {one, call(OP_MUL, {y, y})})
                                                  : call(OP_MUL, {y, call(OP_SUB, {one, y})});
    result = call(OP_MUL, {in[0], d.conj()});
  } else if (special == OP_IDENTITY) {
    result = at::ones(shape, at::TensorOptions().dtype(type).device(device));
  } else if (special == OP_MUL) {  // z^2, z^3, z^-2 as products, as the CPU computes them
    const double e = in[1].item().toComplexDouble().real();
    at::Tensor z = as_complex(in[0], type, shape, device);
    at::Tensor r = complex_elementwise(OP_MUL, "pow", {z, z}, at::Tensor(), {}, type, device);
    if (e == 3) r = complex_elementwise(OP_MUL, "pow", {r, z}, at::Tensor(), {}, type, device);
    if (e == -2) r = complex_kernel(OP_RECIPROCAL, {r}, shape, device);
    result = r;
  } else if (special >= 0) {
    result = complex_kernel(special, {in[0]}, shape, device);
  } else if (type == at::kComplexFloat && vkml::ops::complex_math_has_op(code)) {
    result = complex_kernel(code, in, shape, device);
  } else if (code == OP_ISNAN || code == OP_ISINF || code == OP_ISFINITE) {
    Parts z = parts(as_complex(in[0], type, shape, device));
    result = code == OP_ISNAN   ? at::logical_or(z.re.isnan(), z.im.isnan())
             : code == OP_ISINF ? at::logical_or(z.re.isinf(), z.im.isinf())
                                : at::logical_and(z.re.isfinite(), z.im.isfinite());
  } else if (code == OP_LOGICAL_NOT) {
    result = at::logical_not(nonzero_of(as_complex(in[0], type, shape, device)));
  } else if (code == OP_LOGICAL_AND || code == OP_LOGICAL_OR || code == OP_LOGICAL_XOR) {
    // Either operand may be real; nonzero is read per operand, in its own dtype.
    auto truth = [&](const at::Tensor& t) {
      at::Tensor d = t.to(device);
      return (d.is_complex() ? nonzero_of(d.resolve_conj().resolve_neg()) : d.ne(0)).expand(shape);
    };
    at::Tensor a = truth(in[0]), b = truth(in[1]);
    result = code == OP_LOGICAL_AND  ? at::logical_and(a, b)
             : code == OP_LOGICAL_OR ? at::logical_or(a, b)
                                     : at::logical_xor(a, b);
  } else if (code == OP_WHERE) {  // in: condition, then the two choices, picked as pairs
    shape = at::infer_size(at::infer_size(in[0].sizes(), in[1].sizes()), in[2].sizes());
    at::Tensor cond = in[0].to(device).expand(shape).unsqueeze(-1);
    result = at::view_as_complex(at::where(cond,
                                           at::view_as_real(as_complex(in[1], type, shape, device)),
                                           at::view_as_real(as_complex(in[2], type, shape, device)))
                                     .contiguous());
  } else if (code == OP_ABS || code == OP_ANGLE) {  // real results: |z| and arg z
    TORCH_CHECK(!(out.defined() && out.is_complex() && out.is_same(in[0])), "In-place ", name,
                " is not supported for complex tensors.");
    Parts z = parts(as_complex(in[0], type, shape, device));
    result = code == OP_ABS ? at::hypot(z.re, z.im) : at::atan2(z.im, z.re);
  } else if (code == OP_SIGN) {  // sgn: z / |z|, and 0 at 0
    TORCH_CHECK(std::string(name) != "sign",
                "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                "torch.sgn instead.");
    Parts z = parts(as_complex(in[0], type, shape, device));
    at::Tensor r = at::hypot(z.re, z.im);
    r = r.masked_fill(r.eq(0), 1);
    result = result_of(z.re / r, z.im / r);
  } else if (code == OP_NEG) {
    result = at::view_as_complex(at::view_as_real(as_complex(in[0], type, shape, device)).neg());
  } else {
    Parts a = parts(as_complex(in[0], type, shape, device));
    Parts b = parts(as_complex(in[1], type, shape, device));
    if (code == OP_EQ || code == OP_NE) {  // equal when both parts are
      at::Tensor same = at::logical_and(at::eq(a.re, b.re), at::eq(a.im, b.im));
      result = code == OP_EQ ? same : at::logical_not(same);
    } else if (code == OP_ADD || code == OP_SUB) {
      at::Tensor br = b.re, bi = b.im;
      if (alpha && !(alpha->isIntegral(false) && alpha->toLong() == 1)) {
        // alpha may itself be complex: b * alpha
        const c10::complex<double> k = alpha->toComplexDouble();
        at::Tensor r = br * k.real() - bi * k.imag(), i = br * k.imag() + bi * k.real();
        br = r, bi = i;
      }
      result = code == OP_ADD ? result_of(a.re + br, a.im + bi) : result_of(a.re - br, a.im - bi);
    } else if (code == OP_MUL) {
      result = result_of(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
    } else {
      result = smith_division(a, b);
    }
  }
  if (!out.defined()) return result;
  check_in_place_shape(in, out, result.sizes());  // a.add_(b) with b broadcasting a resized a
  // A complex result into a real out raises, as the CPU's (no silent loss of the imaginary part).
  return write_out_castable(const_cast<at::Tensor&>(out), result);
}

at::Tensor pairwise_prod(const at::Tensor& x, int64_t dim, bool keepdim) {
  at::Tensor y = x.resolve_conj().resolve_neg();
  if (y.size(dim) == 0) {
    std::vector<int64_t> shape = y.sizes().vec();
    shape[dim] = 1;
    y = at::ones(shape, y.options());
  }
  while (y.size(dim) > 1) {
    if (y.size(dim) % 2) y = at::cat({y, at::ones_like(y.narrow(dim, 0, 1))}, dim);
    at::Tensor pairs = y.unflatten(dim, {y.size(dim) / 2, 2});
    y = at::mul(pairs.select(dim + 1, 0), pairs.select(dim + 1, 1));
  }
  // A dim of one element leaves y as x (or a view of it): an op's result may not alias
  // its input (autograd moved the leaf into the graph; writes to it changed x).
  if (y.is_alias_of(x)) y = y.clone();
  return keepdim ? y : y.squeeze(dim);
}

at::Tensor complex_cumprod(const at::Tensor& x, int64_t dim) {
  at::Tensor y = x.resolve_conj().resolve_neg().contiguous();
  const int64_t n = y.size(dim);
  for (int64_t step = 1; step < n; step *= 2) {
    at::Tensor head = y.narrow(dim, 0, step);
    at::Tensor tail = at::mul(y.narrow(dim, step, n - step), y.narrow(dim, 0, n - step));
    y = at::cat({head, tail}, dim);
  }
  return y.is_alias_of(x) ? y.clone() : y;  // a dim of one element: not x itself
}

at::Tensor complex_matmul(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "expected m1 and m2 to have the same dtype, but got: ", a.scalar_type(),
              " != ", b.scalar_type());
  Parts x = parts(a.resolve_conj().resolve_neg()), y = parts(b.resolve_conj().resolve_neg());
  auto product = [&](const at::Tensor& p, const at::Tensor& q) {
    return a.dim() == 3 ? at::bmm(p, q) : at::mm(p, q);
  };
  // (xr + i xi)(yr + i yi) = (xr yr - xi yi) + i (xr yi + xi yr): four real products.
  return result_of(product(x.re, y.re) - product(x.im, y.im),
                   product(x.re, y.im) + product(x.im, y.re));
}

}  // namespace vkml_aten
