// Complex arithmetic (add, sub, mul, div, neg, abs, angle, sgn, where, eq, ne) and matrix products
// composed of native float kernels on the tensors' float views (at::view_as_real: [..., 2] pairs of
// re, im). Complex tensors have storage but no kernels of their own yet (vkml_tensor.h); other
// complex math takes the counted CPU route or raises NotImplementedError.
#include "aten/composite/complex.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>

#include <string>

#include "aten/vkml_tensor.h"
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

}  // namespace

bool complex_op_supported(int code) {
  return code == OP_ADD || code == OP_SUB || code == OP_MUL || code == OP_DIV || code == OP_NEG ||
         code == OP_ABS || code == OP_ANGLE || code == OP_WHERE || code == OP_EQ || code == OP_NE ||
         code == OP_SIGN;
}

at::Tensor complex_elementwise(int code, const char* name, const std::vector<at::Tensor>& in,
                               const at::Tensor& out, const std::optional<at::Scalar>& alpha,
                               at::ScalarType type, const at::Device& device) {
  TORCH_CHECK_NOT_IMPLEMENTED(complex_op_supported(code), name,
                              " on vkml does not support complex tensors yet");
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
  if (code == OP_WHERE) {  // in: condition, then the two choices, picked as pairs
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
    } else {  // (a.re + i a.im) / (b.re + i b.im), unscaled: |b|^2 may overflow where the
              // CPU's scaled division does not
      at::Tensor denom = b.re * b.re + b.im * b.im;
      result = result_of((a.re * b.re + a.im * b.im) / denom, (a.im * b.re - a.re * b.im) / denom);
    }
  }
  if (!out.defined()) return result;
  at::native::resize_output(const_cast<at::Tensor&>(out), result.sizes());
  const_cast<at::Tensor&>(out).copy_(result);
  return out;
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
