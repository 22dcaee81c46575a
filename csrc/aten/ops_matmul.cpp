// Matrix products: mm, addmm, bmm, baddbmm, mv, dot. Operands are read with
// their strides, so transposed views cost no copy.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addr_native.h>
#include <ATen/ops/vdot_native.h>
#include <torch/library.h>

#include "fallback.h"
#include "vkml/ops/matmul.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

void check_gemm_dtype(const char* name, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), name,
              ": expected both operands to have the same dtype, but got ", a.scalar_type(),
              " != ", b.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(a.scalar_type() == at::kFloat || a.scalar_type() == at::kHalf,
                              name, " on vkml supports float32 and float16, got ",
                              a.scalar_type());
}

// out[b] = alpha * a[b] @ m[b] + beta * bias[b]; all 3-D (batch, rows, cols).
void gemm3(const at::Tensor& a, const at::Tensor& m, const at::Tensor& out,
           const at::Tensor& bias, float alpha, float beta) {
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
  if (bias.defined() && beta != 0.0f) {
    g.bias = addr(bias);
    g.bias_batch = bias.stride(0), g.bias_row = bias.stride(1), g.bias_col = bias.stride(2);
  }
  g.alpha = alpha;
  g.beta = bias.defined() ? beta : 0.0f;
  if (out.numel() == 0) return;
  guarded([&] { vkml::ops::gemm(vkml_device(out), g); });
}

// Writes into `out` (resized); computes into a temporary when out overlaps
// an input or has a layout the kernel cannot write.
// bfloat16 operands multiply in float32 (fp32 accumulation, as PyTorch's CPU
// does) and the result is rounded once.
bool upcast_bf16(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == at::kBFloat16 && b.scalar_type() == at::kBFloat16;
}
at::Tensor as_float(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : t; }

at::Tensor& mm_into(const char* name, const at::Tensor& self, const at::Tensor& mat2,
                    const at::Tensor& bias, const at::Scalar& beta, const at::Scalar& alpha,
                    at::Tensor& out) {
  if (upcast_bf16(self, mat2) && out.scalar_type() == at::kBFloat16) {
    at::Tensor r = at::empty({0}, out.options().dtype(at::kFloat));
    mm_into(name, as_float(self), as_float(mat2), as_float(bias), beta, alpha, r);
    at::native::resize_output(out, r.sizes());
    out.copy_(r);
    return out;
  }
  TORCH_CHECK(self.dim() == 2, name, ": self must be a matrix");
  TORCH_CHECK(mat2.dim() == 2, name, ": mat2 must be a matrix");
  TORCH_CHECK(self.size(1) == mat2.size(0), name, ": mat1 and mat2 shapes cannot be multiplied (",
              self.size(0), "x", self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_gemm_dtype(name, self, mat2);
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  at::Tensor b;
  if (bias.defined()) {
    TORCH_CHECK(bias.scalar_type() == self.scalar_type(), name, ": bias dtype ",
                bias.scalar_type(), " does not match ", self.scalar_type());
    b = bias.expand({self.size(0), mat2.size(1)}).unsqueeze(0);
  }
  bool alias = out.is_same(self) || out.is_same(mat2);
  at::Tensor target = alias ? at::empty(out.sizes(), out.options()) : out;
  gemm3(self.unsqueeze(0), mat2.unsqueeze(0), target.unsqueeze(0), b, alpha.toFloat(),
        beta.toFloat());
  if (alias) out.copy_(target);
  return out;
}

// Integer products have no GEMM kernel yet: they take the counted CPU route
// (results exact, a fallback warning), never a silent error.
bool integral(const at::Tensor& t) { return at::isIntegralType(t.scalar_type(), true); }

at::Tensor vk_mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (integral(self)) return cpu_route<at::_ops::mm>(self, mat2);
  at::Tensor out = at::empty({0}, self.options());
  return mm_into("mm", self, mat2, {}, 0, 1, out);
}
at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  return mm_into("mm", self, mat2, {}, 0, 1, out);
}
at::Tensor vk_addmm(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  if (integral(a)) return cpu_route<at::_ops::addmm>(bias, a, b, beta, alpha);
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
  if (upcast_bf16(self, mat2) && out.scalar_type() == at::kBFloat16) {
    at::Tensor r = at::empty({0}, out.options().dtype(at::kFloat));
    bmm_into(name, as_float(self), as_float(mat2), as_float(bias), beta, alpha, r);
    at::native::resize_output(out, r.sizes());
    out.copy_(r);
    return out;
  }
  TORCH_CHECK(self.dim() == 3, name, ": batch1 must be a 3D tensor");
  TORCH_CHECK(mat2.dim() == 3, name, ": batch2 must be a 3D tensor");
  TORCH_CHECK(self.size(0) == mat2.size(0), name, ": batch1 and batch2 must have same number "
              "of batches, got ", self.size(0), " and ", mat2.size(0));
  TORCH_CHECK(self.size(2) == mat2.size(1), name, ": Expected size for first two dimensions "
              "of batch2 tensor to be: [", self.size(0), ", ", self.size(2), "] but got: [",
              mat2.size(0), ", ", mat2.size(1), "].");
  check_gemm_dtype(name, self, mat2);
  std::vector<int64_t> shape{self.size(0), self.size(1), mat2.size(2)};
  at::Tensor b = bias.defined() ? bias.expand(shape) : bias;
  bool alias = out.is_same(self) || out.is_same(mat2) || (bias.defined() && out.is_same(bias));
  if (!alias) at::native::resize_output(out, shape);
  at::Tensor target = alias ? at::empty(shape, out.options()) : out;
  gemm3(self, mat2, target, b, alpha.toFloat(), beta.toFloat());
  if (alias) {
    at::native::resize_output(out, shape);
    out.copy_(target);
  }
  return out;
}
at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (integral(self)) return cpu_route<at::_ops::bmm>(self, mat2);
  at::Tensor out = at::empty({0}, self.options());
  return bmm_into("bmm", self, mat2, {}, 0, 1, out);
}
at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  return bmm_into("bmm", self, mat2, {}, 0, 1, out);
}
at::Tensor baddbmm(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  at::Tensor out = at::empty({0}, a.options());
  return bmm_into("baddbmm", a, b, bias, beta, alpha, out);
}
at::Tensor& baddbmm_out(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b,
                        const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  return bmm_into("baddbmm", a, b, bias, beta, alpha, out);
}
at::Tensor& baddbmm_(at::Tensor& self, const at::Tensor& a, const at::Tensor& b,
                     const at::Scalar& beta, const at::Scalar& alpha) {
  return bmm_into("baddbmm", a, b, self, beta, alpha, self);
}

at::Tensor vk_mv(const at::Tensor& self, const at::Tensor& vec) {
  if (integral(self)) return cpu_route<at::_ops::mv>(self, vec);
  TORCH_CHECK(self.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ",
              self.dim(), ", ", vec.dim());
  return vk_mm(self, vec.unsqueeze(1)).squeeze(1);
}
at::Tensor& mv_out(const at::Tensor& self, const at::Tensor& vec, at::Tensor& out) {
  at::Tensor r = vk_mv(self, vec);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}
at::Tensor dot(const at::Tensor& self, const at::Tensor& other) {
  if (integral(self)) return cpu_route<at::_ops::dot>(self, other);
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(),
              "D and ", other.dim(), "D tensors");
  TORCH_CHECK(self.size(0) == other.size(0), "inconsistent tensor size, expected tensor [",
              self.size(0), "] and src [", other.size(0),
              "] to have the same number of elements, but got ", self.size(0), " and ",
              other.size(0), " elements respectively");
  return vk_mm(self.unsqueeze(0), other.unsqueeze(1)).reshape({});
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
  at::Tensor r = vk_addr(self, v1, v2, beta, alpha);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// addmv = beta * self + alpha * mat @ vec; beta == 0 ignores self (NaNs too).
at::Tensor vk_addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                    const at::Scalar& beta, const at::Scalar& alpha) {
  if (integral(mat)) return cpu_route<at::_ops::addmv>(self, mat, vec, beta, alpha);
  at::Tensor r = vk_mv(mat, vec);
  if (alpha.toDouble() != 1.0) r = r * alpha;
  if (beta.toDouble() == 0.0) return r;
  return beta.toDouble() == 1.0 ? r + self : r + self * beta;
}
at::Tensor& vk_addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                         const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  at::Tensor r = vk_addmv(self, mat, vec, beta, alpha);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}
at::Tensor& vk_addmv_(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                      const at::Scalar& beta, const at::Scalar& alpha) {
  self.copy_(vk_addmv(self, mat, vec, beta, alpha));
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("addmv", TORCH_FN(vk_addmv));
  m.impl("addmv.out", TORCH_FN(vk_addmv_out));
  m.impl("addmv_", TORCH_FN(vk_addmv_));
  m.impl("vdot", TORCH_FN(at::native::vdot));
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
  m.impl("mv", TORCH_FN(vk_mv));
  m.impl("mv.out", TORCH_FN(mv_out));
  m.impl("dot", TORCH_FN(dot));
}

}  // namespace vkml_aten
