// Scans: cumsum, cumprod, cummax / cummin (through _cummax_helper /
// _cummin_helper), logcumsumexp. Their backward formulas are composites of
// these, flip, where and elementwise ops, all native.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/composite/complex.h"
#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/scan.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::ScanOp;

bool scan_dtype(at::ScalarType t, ScanOp op) {
  switch (t) {
    case at::kFloat:
    case at::kHalf:
    case at::kBFloat16:
    case at::kDouble:
      return true;
    case at::kInt:
    case at::kLong:
    case at::kByte:
      return op != ScanOp::LogSumExp;
    case at::kBool:
      return op == ScanOp::Max || op == ScanOp::Min;
    default:
      return false;
  }
}

// Scans `self` (converted to dtype `dt`) along dim; writes indices for Max / Min.
at::Tensor run_scan(const char* name, const at::Tensor& self, int64_t dim, ScanOp op,
                    at::ScalarType dt, at::Tensor* indices = nullptr) {
  int64_t d = at::maybe_wrap_dim(dim, self.dim());
  if (at::isComplexType(dt) && !indices && (op == ScanOp::Sum || op == ScanOp::Prod)) {
    at::Tensor c = (self.scalar_type() == dt ? self : self.to(dt)).resolve_conj().resolve_neg();
    if (c.dim() == 0) return c.clone();
    if (op == ScanOp::Prod) return complex_cumprod(c, d);
    // A running sum of each part: the pairs' trailing dim is not scanned.
    at::Tensor parts = at::view_as_real(c.contiguous());
    return at::view_as_complex(run_scan(name, parts, d, op, parts.scalar_type()));
  }
  if ((dt == at::kShort || dt == at::kChar) && op != ScanOp::LogSumExp) {
    // int16 and int8 scan in int32: running sums and products wrap to the same low bits.
    return run_scan(name, self, dim, op, at::kInt, indices).to(dt);
  }
  TORCH_CHECK_NOT_IMPLEMENTED(scan_dtype(dt, op), name, " on vkml does not support ", dt, " yet");
  TORCH_CHECK_NOT_IMPLEMENTED(dt != at::kDouble || vkml_device(self).info().supports_fp64, name,
                              " on vkml: ", vkml_device(self).info().name,
                              " has no float64 arithmetic");
  if (line_walk_too_long(self, d, 1)) {
    at::Tensor moved_indices;
    at::Tensor moved =
        run_scan(name, self.movedim(d, -1), -1, op, dt, indices ? &moved_indices : nullptr);
    if (indices) *indices = moved_indices.movedim(-1, d).contiguous();
    return moved.movedim(-1, d).contiguous();
  }
  at::Tensor in = (self.scalar_type() == dt ? self : self.to(dt)).contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (indices) *indices = at::empty(in.sizes(), in.options().dtype(at::kLong));
  if (in.numel() == 0) return out;
  vkml::ops::ScanArgs a;
  a.op = op;
  a.dtype = to_vkml(dt);
  a.in = addr(in);
  a.out = addr(out);
  a.indices = indices ? addr(*indices) : 0;
  for (int64_t k = 0; k < d; ++k) a.outer *= in.size(k);
  a.n = in.dim() == 0 ? 1 : in.size(d);
  for (int64_t k = d + 1; k < in.dim(); ++k) a.inner *= in.size(k);
  guarded([&] { vkml::ops::scan(vkml_device(in), a); });
  return out;
}

at::ScalarType acc_type(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), true) ? at::kLong : self.scalar_type();
}

at::Tensor vk_cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return run_scan("cumsum", self, dim, ScanOp::Sum, acc_type(self, dtype));
}
at::Tensor& cumsum_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(!dtype || *dtype == self.scalar_type(),
              "provided dtype must match the dtype of self tensor in cumsum. Got ", *dtype, " and ",
              self.scalar_type(), ".");
  self.copy_(run_scan("cumsum", self, dim, ScanOp::Sum, self.scalar_type()));
  return self;
}
at::Tensor& cumsum_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                       at::Tensor& out) {
  return write_out(out,
                   run_scan("cumsum", self, dim, ScanOp::Sum, dtype.value_or(out.scalar_type())));
}

at::Tensor vk_cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return run_scan("cumprod", self, dim, ScanOp::Prod, acc_type(self, dtype));
}
at::Tensor& cumprod_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(!dtype || *dtype == self.scalar_type(),
              "provided dtype must match the dtype of self tensor in cumprod. Got ", *dtype,
              " and ", self.scalar_type(), ".");
  self.copy_(run_scan("cumprod", self, dim, ScanOp::Prod, self.scalar_type()));
  return self;
}
at::Tensor& cumprod_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                        at::Tensor& out) {
  return write_out(out,
                   run_scan("cumprod", self, dim, ScanOp::Prod, dtype.value_or(out.scalar_type())));
}

void cum_minmax(const char* name, ScanOp op, const at::Tensor& self, at::Tensor& values,
                at::Tensor& indices, int64_t dim) {
  at::Tensor idx;
  at::Tensor v = run_scan(name, self, dim, op, self.scalar_type(), &idx);
  write_out(values, v);
  write_out(indices, idx);
}
void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  cum_minmax("cummax", ScanOp::Max, self, values, indices, dim);
}
void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  cum_minmax("cummin", ScanOp::Min, self, values, indices, dim);
}

at::Tensor vk_logcumsumexp(const at::Tensor& self, int64_t dim) {
  // Complex log-sum-exp has no kernel: the counted CPU route.
  if (self.is_complex()) return cpu_route<at::_ops::_logcumsumexp>(self, dim);
  return run_scan("logcumsumexp", self, dim, ScanOp::LogSumExp, self.scalar_type());
}
at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  return write_out(out, vk_logcumsumexp(self, dim));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cumsum", TORCH_FN(vk_cumsum));
  m.impl("cumsum_", TORCH_FN(cumsum_));
  m.impl("cumsum.out", TORCH_FN(cumsum_out));
  m.impl("cumprod", TORCH_FN(vk_cumprod));
  m.impl("cumprod_", TORCH_FN(cumprod_));
  m.impl("cumprod.out", TORCH_FN(cumprod_out));
  m.impl("_cummax_helper", TORCH_FN(cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(cummin_helper));
  m.impl("_logcumsumexp", TORCH_FN(vk_logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(logcumsumexp_out));
}

}  // namespace vkml_aten
