// Matrix products: mm, addmm, bmm, baddbmm, addbmm, mv, dot, addr, addmv, _int_mm, and
// the 3-vector cross product. Operands are read with their strides, so
// transposed views cost no copy.
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addr_native.h>
#include <torch/library.h>

#include "aten/composite/complex.h"
#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/matmul.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

bool gemm_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kLong ||
         t == at::kInt || t == at::kShort || t == at::kChar || t == at::kByte || t == at::kDouble;
}

void check_gemm_dtype(const char* name, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), name,
              ": expected both operands to have the same dtype, but got ", a.scalar_type(),
              " != ", b.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(
      gemm_dtype(a.scalar_type()), name,
      " on vkml supports float32, float16, bfloat16, float64, int64, int32, "
      "int16, int8 and uint8, got ",
      a.scalar_type());
}

// out[b] = alpha * a[b] @ m[b] + beta * bias[b]; all 3-D (batch, rows, cols).
void gemm3(const at::Tensor& a, const at::Tensor& m, const at::Tensor& out, const at::Tensor& bias,
           const at::Scalar& alpha_s, const at::Scalar& beta_s) {
  if (a.scalar_type() == at::kDouble) {
    TORCH_CHECK_NOT_IMPLEMENTED(vkml_device(a).info().supports_fp64,
                                "matmul on vkml: ", vkml_device(a).info().name,
                                " has no float64 arithmetic");
    // The kernel takes alpha and beta as float32: others scale in float64 afterwards.
    const double alpha = alpha_s.toDouble(), beta = beta_s.toDouble();
    if (double(float(alpha)) != alpha || double(float(beta)) != beta) {
      gemm3(a, m, out, at::Tensor(), 1, 0);
      if (alpha != 1.0) out.mul_(alpha);
      if (bias.defined() && beta != 0.0) out.add_(bias, beta);
      return;
    }
  }
  bool integer = at::isIntegralType(a.scalar_type(), false);
  if (integer) {  // the out= forms reach here without cpu_only's conversion check
    check_scalar_fits(alpha_s, a.scalar_type());
    check_scalar_fits(beta_s, a.scalar_type());
  }
  float alpha = integer ? 0.0f : alpha_s.toFloat(), beta = integer ? 0.0f : beta_s.toFloat();
  int64_t int_beta = integer ? beta_s.toLong() : 0;
  vkml::ops::GemmArgs g;
  g.dtype = to_vkml(a.scalar_type());
  g.batch = out.size(0);
  g.m = out.size(1);
  g.n = out.size(2);
  g.k = a.size(2);
  g.a = addr(a);
  g.a_batch = a.stride(0), g.a_row = a.stride(1), g.a_col = a.stride(2);
  g.b = addr(m);
  g.b_batch = m.stride(0), g.b_row = m.stride(1), g.b_col = m.stride(2);
  g.c = addr(out);
  g.c_batch = out.stride(0), g.c_row = out.stride(1), g.c_col = out.stride(2);
  if (bias.defined() && (integer ? int_beta != 0 : beta != 0.0f)) {
    g.bias = addr(bias);
    g.bias_batch = bias.stride(0), g.bias_row = bias.stride(1), g.bias_col = bias.stride(2);
  }
  g.alpha = alpha;
  g.beta = bias.defined() ? beta : 0.0f;
  // torch.set_float32_matmul_precision: "high" and "medium" let float32 products run on
  // bf16 matrix units (ops/gemm_bf16x3.h), as CUDA runs them on TF32 tensor cores, where
  // TORCH_VKML_FP32_ON_BF16=1 turns that on.
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGH:
      g.precision = vkml::ops::Fp32Precision::kHigh;
      break;
    case at::Float32MatmulPrecision::MEDIUM:
      g.precision = vkml::ops::Fp32Precision::kMedium;
      break;
    default:
      break;
  }
  if (integer) {
    g.int_alpha = alpha_s.toLong();
    g.int_beta = bias.defined() ? int_beta : 0;
  }
  if (out.numel() == 0) return;
  guarded([&] { vkml::ops::gemm(vkml_device(out), g); });
}

// Writes into `out` (resized); computes into a temporary when out overlaps
// an input or has a layout the kernel cannot write.
// bfloat16 GEMMs accumulate in fp32 and round once, as PyTorch's CPU does; a
// device without 16-bit storage gets the same math through float32 copies.
bool upcast_bf16(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == at::kBFloat16 && b.scalar_type() == at::kBFloat16 &&
         !vkml_device(a).info().supports_fp16;
}
at::Tensor as_float(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : t; }

// Complex products: four real GEMMs (composite/complex.cpp), then bias, alpha and beta.
at::Tensor& complex_into(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& bias,
                         const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  at::Tensor r = complex_matmul(self, mat2);
  if (!(alpha.isIntegral(false) && alpha.toLong() == 1)) r = r * alpha;
  if (bias.defined() && !(beta.isIntegral(false) && beta.toLong() == 0))
    r = r + bias.expand(r.sizes()) * beta;
  return write_out(out, r);
}

at::Tensor& mm_into(const char* name, const at::Tensor& self, const at::Tensor& mat2,
                    const at::Tensor& bias, const at::Scalar& beta, const at::Scalar& alpha,
                    at::Tensor& out) {
  check_out(out, self.scalar_type());  // the GEMM writes out's bytes as self's dtype
  if (self.is_complex() && self.dim() == 2 && mat2.dim() == 2)
    return complex_into(self, mat2, bias, beta, alpha, out);
  if (upcast_bf16(self, mat2) && out.scalar_type() == at::kBFloat16) {
    at::Tensor r = at::empty({0}, out.options().dtype(at::kFloat));
    mm_into(name, as_float(self), as_float(mat2), as_float(bias), beta, alpha, r);
    return write_out(out, r);
  }
  TORCH_CHECK(self.dim() == 2, name, ": self must be a matrix");
  TORCH_CHECK(mat2.dim() == 2, name, ": mat2 must be a matrix");
  TORCH_CHECK(self.size(1) == mat2.size(0), name, ": mat1 and mat2 shapes cannot be multiplied (",
              self.size(0), "x", self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_gemm_dtype(name, self, mat2);
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  at::Tensor b;
  if (bias.defined()) {
    TORCH_CHECK(bias.scalar_type() == self.scalar_type(), name, ": bias dtype ", bias.scalar_type(),
                " does not match ", self.scalar_type());
    b = bias.expand({self.size(0), mat2.size(1)}).unsqueeze(0);
  }
  bool alias = out.is_same(self) || out.is_same(mat2);
  at::Tensor target = alias ? at::empty(out.sizes(), out.options()) : out;
  gemm3(self.unsqueeze(0), mat2.unsqueeze(0), target.unsqueeze(0), b, alpha, beta);
  if (alias) out.copy_(target);
  return out;
}

// The integer GEMM variants take alpha and beta as int32. The CPU converts them to the
// element type first (Scalar::to: a float truncates, a value out of range raises, here
// too); bool, int16 on a device without 16-bit integers, and int64 scalars past int32
// take the counted CPU route.
bool cpu_only(const at::Tensor& t, const at::Scalar& alpha = 1, const at::Scalar& beta = 0) {
  at::ScalarType st = t.scalar_type();
  if (!at::isIntegralType(st, true)) return false;
  if (!gemm_dtype(st) || (st == at::kShort && !vkml_device(t).info().supports_int16)) return true;
  check_scalar_fits(alpha, st);
  check_scalar_fits(beta, st);
  auto fits = [](const at::Scalar& s) {
    return !s.isComplex() && s.toLong() >= INT32_MIN && s.toLong() <= INT32_MAX;
  };
  return !fits(alpha) || !fits(beta);
}

at::Tensor vk_mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (cpu_only(self)) return cpu_route<at::_ops::mm>(self, mat2);
  at::Tensor out = at::empty({0}, self.options());
  return mm_into("mm", self, mat2, {}, 0, 1, out);
}
at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  return mm_into("mm", self, mat2, {}, 0, 1, out);
}
at::Tensor vk_addmm(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b,
                    const at::Scalar& beta, const at::Scalar& alpha) {
  if (cpu_only(a, alpha, beta)) return cpu_route<at::_ops::addmm>(bias, a, b, beta, alpha);
  at::Tensor out = at::empty({0}, a.options());
  return mm_into("addmm", a, b, bias, beta, alpha, out);
}
at::Tensor& addmm_out(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (out.is_same(bias)) {  // addmm_: the bias is read while the output is written
    at::Tensor tmp = vk_addmm(bias, a, b, beta, alpha);
    out.copy_(tmp);
    return out;
  }
  return mm_into("addmm", a, b, bias, beta, alpha, out);
}
at::Tensor& addmm_(at::Tensor& self, const at::Tensor& a, const at::Tensor& b,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  return addmm_out(self, a, b, beta, alpha, self);
}

at::Tensor& bmm_into(const char* name, const at::Tensor& self, const at::Tensor& mat2,
                     const at::Tensor& bias, const at::Scalar& beta, const at::Scalar& alpha,
                     at::Tensor& out) {
  check_out(out, self.scalar_type());  // the GEMM writes out's bytes as self's dtype
  if (self.is_complex() && self.dim() == 3 && mat2.dim() == 3 && self.size(0) == mat2.size(0))
    return complex_into(self, mat2, bias, beta, alpha, out);
  if (upcast_bf16(self, mat2) && out.scalar_type() == at::kBFloat16) {
    at::Tensor r = at::empty({0}, out.options().dtype(at::kFloat));
    bmm_into(name, as_float(self), as_float(mat2), as_float(bias), beta, alpha, r);
    at::native::resize_output(out, r.sizes());
    out.copy_(r);
    return out;
  }
  TORCH_CHECK(self.dim() == 3, name, ": batch1 must be a 3D tensor");
  TORCH_CHECK(mat2.dim() == 3, name, ": batch2 must be a 3D tensor");
  TORCH_CHECK(self.size(0) == mat2.size(0), name,
              ": batch1 and batch2 must have same number "
              "of batches, got ",
              self.size(0), " and ", mat2.size(0));
  TORCH_CHECK(self.size(2) == mat2.size(1), name,
              ": Expected size for first two dimensions "
              "of batch2 tensor to be: [",
              self.size(0), ", ", self.size(2), "] but got: [", mat2.size(0), ", ", mat2.size(1),
              "].");
  check_gemm_dtype(name, self, mat2);
  std::vector<int64_t> shape{self.size(0), self.size(1), mat2.size(2)};
  at::Tensor b = bias.defined() ? bias.expand(shape) : bias;
  bool alias = out.is_same(self) || out.is_same(mat2) || (bias.defined() && out.is_same(bias));
  if (!alias) at::native::resize_output(out, shape);
  at::Tensor target = alias ? at::empty(shape, out.options()) : out;
  gemm3(self, mat2, target, b, alpha, beta);
  if (alias) {
    at::native::resize_output(out, shape);
    out.copy_(target);
  }
  return out;
}
at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (cpu_only(self)) return cpu_route<at::_ops::bmm>(self, mat2);
  at::Tensor out = at::empty({0}, self.options());
  return bmm_into("bmm", self, mat2, {}, 0, 1, out);
}
at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  return bmm_into("bmm", self, mat2, {}, 0, 1, out);
}
at::Tensor baddbmm(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  if (cpu_only(a, alpha, beta)) return cpu_route<at::_ops::baddbmm>(bias, a, b, beta, alpha);
  at::Tensor out = at::empty({0}, a.options());
  return bmm_into("baddbmm", a, b, bias, beta, alpha, out);
}
at::Tensor& baddbmm_out(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b,
                        const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  return bmm_into("baddbmm", a, b, bias, beta, alpha, out);
}
at::Tensor& baddbmm_(at::Tensor& self, const at::Tensor& a, const at::Tensor& b,
                     const at::Scalar& beta, const at::Scalar& alpha) {
  // In place, self is the result and keeps its shape: it may not broadcast (the CPU's words).
  if (a.dim() == 3 && b.dim() == 3) {
    const std::vector<int64_t> shape{a.size(0), a.size(1), b.size(2)};
    TORCH_CHECK(self.sizes() == at::IntArrayRef(shape), "Bad in-place call: input tensor size ",
                self.sizes(), " and output tensor size ", at::IntArrayRef(shape), " should match");
  }
  return bmm_into("baddbmm", a, b, self, beta, alpha, self);
}

// addbmm = beta * self + alpha * sum_b batch1[b] @ batch2[b]: the batch folds into
// the inner dim of one GEMM ([n, b*m] @ [b*m, p]).
at::Tensor vk_addbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                     const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(batch1.size(0) == batch2.size(0),
              "batch1 and batch2 must have same number of "
              "batches, got ",
              batch1.size(0), " and ", batch2.size(0));
  TORCH_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (",
              batch1.size(1), "x", batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2),
              ")");
  int64_t b = batch1.size(0), n = batch1.size(1), m = batch1.size(2), p = batch2.size(2);
  if (batch1.scalar_type() == at::kBFloat16 && b > 0) {
    // The CPU accumulates bfloat16 batch by batch, rounding after each addmm.
    at::Tensor r = vk_addmm(self.expand({n, p}), batch1[0], batch2[0], beta, alpha);
    for (int64_t i = 1; i < b; ++i) r = vk_addmm(r, batch1[i], batch2[i], 1, alpha);
    return r;
  }
  at::Tensor a = batch1.permute({1, 0, 2}).reshape({n, b * m});
  at::Tensor c = batch2.reshape({b * m, p});
  return vk_addmm(self.expand({n, p}), a, c, beta, alpha);
}
at::Tensor& vk_addbmm_out(const at::Tensor& self, const at::Tensor& batch1,
                          const at::Tensor& batch2, const at::Scalar& beta, const at::Scalar& alpha,
                          at::Tensor& out) {
  return write_out_exact(out, vk_addbmm(self, batch1, batch2, beta, alpha));
}
at::Tensor& vk_addbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const at::Scalar& beta, const at::Scalar& alpha) {
  return vk_addbmm_out(self, batch1, batch2, beta, alpha, self);
}

// linalg_cross: out_i = a_j * b_k - a_k * b_j along `dim` (size 3) over the
// broadcast shape; each product and difference one elementwise kernel, as the
// CPU computes it (integers wrap).
at::Tensor& vk_linalg_cross_out(const at::Tensor& input, const at::Tensor& other, int64_t dim,
                                at::Tensor& out) {
  check_out(out, input.scalar_type());
  TORCH_CHECK(input.dim() == other.dim(),
              "linalg.cross: inputs must have the same number of "
              "dimensions.");
  TORCH_CHECK(input.scalar_type() == other.scalar_type(),
              "linalg.cross: expected both inputs "
              "to have the same dtype, but got ",
              input.scalar_type(), " and ", other.scalar_type());
  auto shape = at::infer_size(input.sizes(), other.sizes());
  dim = at::maybe_wrap_dim(dim, int64_t(shape.size()));
  TORCH_CHECK(input.size(dim) == 3 && other.size(dim) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", input.size(dim), " and ", other.size(dim));
  at::Tensor a = input.expand(shape), b = other.expand(shape);
  bool alias = out.is_same(input) || out.is_same(other);
  at::Tensor r = alias ? at::empty(shape, input.options()) : out;
  if (!alias) at::native::resize_output(r, shape);
  for (int64_t i = 0; i < 3; ++i) {
    int64_t j = (i + 1) % 3, k = (i + 2) % 3;
    at::Tensor o = r.select(dim, i);
    at::sub_out(o, a.select(dim, j) * b.select(dim, k), a.select(dim, k) * b.select(dim, j));
  }
  if (alias) {
    at::native::resize_output(out, shape);
    out.copy_(r);
  }
  return out;
}
at::Tensor vk_linalg_cross(const at::Tensor& input, const at::Tensor& other, int64_t dim) {
  at::Tensor out = at::empty({0}, input.options());
  return vk_linalg_cross_out(input, other, dim, out);
}

at::Tensor vk_mv(const at::Tensor& self, const at::Tensor& vec) {
  if (cpu_only(self)) return cpu_route<at::_ops::mv>(self, vec);
  TORCH_CHECK(self.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ",
              self.dim(), ", ", vec.dim());
  return vk_mm(self, vec.unsqueeze(1)).squeeze(1);
}
at::Tensor& mv_out(const at::Tensor& self, const at::Tensor& vec, at::Tensor& out) {
  return write_out_exact(out, vk_mv(self, vec));
}
at::Tensor dot(const at::Tensor& self, const at::Tensor& other) {
  if (cpu_only(self)) return cpu_route<at::_ops::dot>(self, other);
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(),
              "D and ", other.dim(), "D tensors");
  TORCH_CHECK(self.size(0) == other.size(0), "inconsistent tensor size, expected tensor [",
              self.size(0), "] and src [", other.size(0),
              "] to have the same number of elements, but got ", self.size(0), " and ",
              other.size(0), " elements respectively");
  return vk_mm(self.unsqueeze(0), other.unsqueeze(1)).reshape({});
}

// vdot(a, b) = dot(conj(a), b). ATen's own vdot reads complex inputs through host pointers
// (a BLAS loop), which on vkml memory gives garbage.
at::Tensor vk_vdot(const at::Tensor& self, const at::Tensor& other) {
  return vkml_aten::dot(self.is_complex() ? self.conj() : self, other);
}

// bfloat16 addr as the CPU kernel computes it, beta * self + (alpha * v1) * v2, with
// beta and alpha rounded to bfloat16 and every product and the sum rounded to
// bfloat16 (each native bfloat16 elementwise op rounds its result once).
at::Tensor addr_bf16(const at::Tensor& self, const at::Tensor& v1, const at::Tensor& v2,
                     const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(v1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", v1.dim(), "-D");
  TORCH_CHECK(v2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", v2.dim(), "-D");
  TORCH_CHECK(at::is_expandable_to(self.sizes(), {v1.size(0), v2.size(0)}),
              "The size of tensor a (", self.sizes(), ") must be expandable to the outer ",
              "product of size [", v1.size(0), ", ", v2.size(0), "]");
  double b = float(c10::BFloat16(float(beta.toDouble())));
  double a = float(c10::BFloat16(float(alpha.toDouble())));
  at::Tensor prod = at::outer(a == 1.0 ? v1 : v1 * a, v2);
  if (b == 0.0) return prod;  // self is ignored, its NaNs too
  return (b == 1.0 ? self : self * b) + prod;
}

// addr (self + outer product): ATen's composite form from native ops.
at::Tensor vk_addr(const at::Tensor& self, const at::Tensor& v1, const at::Tensor& v2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  if (self.scalar_type() == at::kBFloat16 && v1.scalar_type() == at::kBFloat16 &&
      v2.scalar_type() == at::kBFloat16 && !beta.isComplex() && !alpha.isComplex())
    return addr_bf16(self, v1, v2, beta, alpha);
  return at::native::math_addr(self, v1, v2, beta, alpha);
}
at::Tensor& vk_addr_out(const at::Tensor& self, const at::Tensor& v1, const at::Tensor& v2,
                        const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  return write_out_castable(out, vk_addr(self, v1, v2, beta, alpha));
}

// addmv = beta * self + alpha * mat @ vec; beta == 0 ignores self (NaNs too).
at::Tensor vk_addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                    const at::Scalar& beta, const at::Scalar& alpha) {
  if (cpu_only(mat, alpha, beta)) return cpu_route<at::_ops::addmv>(self, mat, vec, beta, alpha);
  if (at::isIntegralType(mat.scalar_type(), false)) {  // alpha and beta as the element type
    TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1 && self.dim() <= 1,
                "vector + matrix @ vector expected, got ", self.dim(), ", ", mat.dim(), ", ",
                vec.dim());
    TORCH_CHECK(mat.size(1) == vec.size(0) && (self.numel() == 1 || self.numel() == mat.size(0)),
                "size mismatch, got input (", self.numel(), "), mat (", mat.size(0), "x",
                mat.size(1), "), vec (", vec.size(0), ")");
    return vk_addmm(self.reshape({-1, 1}).expand({mat.size(0), 1}), mat, vec.unsqueeze(1), beta,
                    alpha)
        .squeeze(1);
  }
  at::Tensor r = vk_mv(mat, vec);
  if (alpha.toDouble() != 1.0) r = r * alpha;
  if (beta.toDouble() == 0.0) return r;
  return beta.toDouble() == 1.0 ? r + self : r + self * beta;
}
at::Tensor& vk_addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                         const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  return write_out_exact(out, vk_addmv(self, mat, vec, beta, alpha));
}
at::Tensor& vk_addmv_(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                      const at::Scalar& beta, const at::Scalar& alpha) {
  self.copy_(vk_addmv(self, mat, vec, beta, alpha));
  return self;
}

// torch._int_mm, the product of int8 quantized linear layers (torchao): int8 operands,
// int32 sums kept whole. The CPU's uint8 @ int8 form (a oneDNN path) takes its route.
at::Tensor& vk_int_mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  TORCH_CHECK(self.dim() == 2, "_int_mm: Expected self to be of dimension 2 but got ", self.dim());
  TORCH_CHECK(mat2.dim() == 2, "_int_mm: Expected mat2 to be of dimension 2 but got ", mat2.dim());
  TORCH_CHECK(self.size(1) == mat2.size(0),
              "_int_mm: self.size(1) needs to match mat2.size(0) but got ", self.size(1), " and ",
              mat2.size(0));
  TORCH_CHECK(self.scalar_type() == at::kChar || self.scalar_type() == at::kByte,
              "_int_mm: Expected self dtype to be int8 or uint8 but got ", self.dtype());
  TORCH_CHECK(mat2.scalar_type() == at::kChar,
              "_int_mm: Expected mat2 dtype to be of type int8 but got ", mat2.dtype());
  TORCH_CHECK(out.scalar_type() == at::kInt,
              "_int_mm: Expected result dtype to be of type kInt but got ", out.dtype());
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  if (self.scalar_type() == at::kByte) return cpu_route<at::_ops::_int_mm_out>(self, mat2, out);
  if (out.numel() == 0) return out;
  const bool alias = out.is_alias_of(self) || out.is_alias_of(mat2);
  at::Tensor c = alias ? at::empty(out.sizes(), out.options()) : out;
  vkml::ops::GemmArgs g;
  g.dtype = vkml::DType::i8;
  g.i32_result = true;
  g.m = self.size(0), g.n = mat2.size(1), g.k = self.size(1);
  g.a = addr(self), g.a_row = self.stride(0), g.a_col = self.stride(1);
  g.b = addr(mat2), g.b_row = mat2.stride(0), g.b_col = mat2.stride(1);
  g.c = addr(c), g.c_row = c.stride(0), g.c_col = c.stride(1);
  guarded([&] { vkml::ops::gemm(vkml_device(out), g); });
  if (alias) out.copy_(c);
  return out;
}
at::Tensor vk_int_mm(const at::Tensor& self, const at::Tensor& mat2) {
  // Sized first, as the CPU's: a 1-D mat2 raises its IndexError here.
  at::Tensor out = at::empty({self.size(0), mat2.size(1)}, self.options().dtype(at::kInt));
  return vk_int_mm_out(self, mat2, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("addmv", TORCH_FN(vk_addmv));
  m.impl("addmv.out", TORCH_FN(vk_addmv_out));
  m.impl("addmv_", TORCH_FN(vk_addmv_));
  m.impl("vdot", TORCH_FN(vk_vdot));
  m.impl("addr", TORCH_FN(vk_addr));
  m.impl("addr.out", TORCH_FN(vk_addr_out));
  m.impl("mm", TORCH_FN(vk_mm));
  m.impl("mm.out", TORCH_FN(mm_out));
  m.impl("addmm", TORCH_FN(vk_addmm));
  m.impl("addmm.out", TORCH_FN(addmm_out));
  m.impl("addmm_", TORCH_FN(addmm_));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("bmm.out", TORCH_FN(bmm_out));
  m.impl("baddbmm", TORCH_FN(baddbmm));
  m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
  m.impl("baddbmm_", TORCH_FN(baddbmm_));
  m.impl("addbmm", TORCH_FN(vk_addbmm));
  m.impl("addbmm.out", TORCH_FN(vk_addbmm_out));
  m.impl("addbmm_", TORCH_FN(vk_addbmm_));
  m.impl("linalg_cross", TORCH_FN(vk_linalg_cross));
  m.impl("linalg_cross.out", TORCH_FN(vk_linalg_cross_out));
  m.impl("mv", TORCH_FN(vk_mv));
  m.impl("mv.out", TORCH_FN(mv_out));
  m.impl("dot", TORCH_FN(dot));
  m.impl("_int_mm", TORCH_FN(vk_int_mm));
  m.impl("_int_mm.out", TORCH_FN(vk_int_mm_out));
}

}  // namespace vkml_aten
