// Searching and counting: searchsorted, bucketize, histc, bincount.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <string_view>

#include "vkml/ops/search.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// Comparisons run on float32 (floating dtypes) or int64 keys; both exact for the
// dtypes accepted.
at::ScalarType key_type(const char* op, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16 ||
                                  t == at::kLong || t == at::kInt || t == at::kShort ||
                                  t == at::kChar || t == at::kByte,
                              op, " on vkml does not support ", t);
  return at::isFloatingType(t) ? at::kFloat : at::kLong;
}

at::Tensor as_contiguous(const at::Tensor& t, at::ScalarType dtype) {
  if (t.scalar_type() == dtype && t.is_contiguous()) return t;
  at::Tensor c = at::empty(t.sizes(), t.options().dtype(dtype));
  c.copy_(t);
  return c;
}

// ------------------------------------------------- searchsorted, bucketize

at::Tensor& vk_searchsorted_out(const at::Tensor& boundaries, const at::Tensor& self,
                                bool out_int32,
                             bool right, std::optional<std::string_view> side,
                             const std::optional<at::Tensor>& sorter_opt, at::Tensor& out) {
  if (side) {
    TORCH_CHECK(*side == "left" || *side == "right",
                "torch.searchsorted(): side can only be 'left' or 'right' but got ", *side);
    TORCH_CHECK(!right || *side == "right", "torch.searchsorted(): side and right can't be set "
                "to opposites, got side of left while right was True");
    right = *side == "right";
  }
  TORCH_CHECK(boundaries.dim() > 0, "torch.searchsorted(): boundaries tensor should have "
              "positive dimension, but got 0 dimension");
  bool one_d = boundaries.dim() == 1;
  if (!one_d) {
    bool match = self.dim() == boundaries.dim();
    for (int64_t k = 0; match && k + 1 < self.dim(); ++k)
      match = self.size(k) == boundaries.size(k);
    TORCH_CHECK(match, "torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                "N-1 dimensions of boundaries tensor and input value tensor must match, but we got "
                "boundaries tensor ", boundaries.sizes(), " and input value tensor ", self.sizes());
  }
  at::Tensor sorter;
  if (sorter_opt && sorter_opt->defined()) {
    sorter = *sorter_opt;
    TORCH_CHECK(sorter.scalar_type() == at::kLong, "torch.searchsorted(): sorter must be a tensor "
                "of long dtype but got dtype ", sorter.scalar_type());
    TORCH_CHECK(sorter.sizes() == boundaries.sizes(), "torch.searchsorted(): boundary and sorter "
                "must have the same size, but got boundary tensor ", boundaries.sizes(),
                "and got sorter tensor ", sorter.sizes());
    sorter = sorter.contiguous();
  }
  at::ScalarType out_type = out_int32 ? at::kInt : at::kLong;
  TORCH_CHECK(out.scalar_type() == out_type, "torch.searchsorted(): output tensor's dtype is "
              "wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 "
              "flag is True, but we got output tensor's dtype ", out.scalar_type(),
              " and out_int32 flag is ", (out_int32 ? "True" : "False"));
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  at::ScalarType common = at::promote_types(boundaries.scalar_type(), self.scalar_type());
  at::ScalarType kt = key_type("searchsorted", common);
  at::Tensor b = as_contiguous(boundaries, kt), v = as_contiguous(self, kt);
  at::Tensor dst = out.is_contiguous() ? out : at::empty(self.sizes(), out.options());
  int64_t m = boundaries.size(-1);
  int64_t per_row = one_d ? self.numel() : self.size(-1);
  guarded([&] {
    vkml::ops::searchsorted(vkml_device(v), to_vkml(kt), addr(b), addr(v),
                            sorter.defined() ? addr(sorter) : 0, addr(dst), m, per_row,
                            self.numel(), right, out_int32);
  });
  if (!dst.is_same(out)) out.copy_(dst);
  return out;
}

at::Tensor vk_searchsorted(const at::Tensor& boundaries, const at::Tensor& self, bool out_int32,
                        bool right, std::optional<std::string_view> side,
                        const std::optional<at::Tensor>& sorter) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return vk_searchsorted_out(boundaries, self, out_int32, right, side, sorter, out);
}

at::Tensor scalar_tensor_like(const at::Scalar& s, const at::Tensor& like) {
  return at::scalar_tensor(s, like.options().dtype(s.type()));
}

at::Tensor& vk_searchsorted_scalar_out(const at::Tensor& boundaries, const at::Scalar& self,
                                    bool out_int32, bool right,
                                    std::optional<std::string_view> side,
                                    const std::optional<at::Tensor>& sorter, at::Tensor& out) {
  return vk_searchsorted_out(boundaries, scalar_tensor_like(self, boundaries), out_int32, right,
                             side,
                          sorter, out);
}

at::Tensor vk_searchsorted_scalar(const at::Tensor& boundaries, const at::Scalar& self,
                               bool out_int32, bool right, std::optional<std::string_view> side,
                               const std::optional<at::Tensor>& sorter) {
  return vk_searchsorted(boundaries, scalar_tensor_like(self, boundaries), out_int32, right, side,
                      sorter);
}

void check_bucketize(const at::Tensor& boundaries) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
}

at::Tensor& vk_bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32,
                          bool right, at::Tensor& out) {
  check_bucketize(boundaries);
  return vk_searchsorted_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}

at::Tensor vk_bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32,
                     bool right) {
  check_bucketize(boundaries);
  return vk_searchsorted(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}

at::Tensor& vk_bucketize_scalar_out(const at::Scalar& self, const at::Tensor& boundaries,
                                 bool out_int32, bool right, at::Tensor& out) {
  return vk_bucketize_out(scalar_tensor_like(self, boundaries), boundaries, out_int32, right, out);
}

at::Tensor vk_bucketize_scalar(const at::Scalar& self, const at::Tensor& boundaries, bool out_int32,
                            bool right) {
  return vk_bucketize(scalar_tensor_like(self, boundaries), boundaries, out_int32, right);
}

// ---------------------------------------------------------------- histc

at::Tensor& vk_histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, at::Tensor& out) {
  TORCH_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins, " for dimension 0");
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(self.scalar_type()),
                              "\"histogram_cpu\" not implemented for '", self.scalar_type(), "'");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "torch.histc: input tensor and hist "
              "tensor should have the same dtype, but got input ", self.scalar_type(),
              " and hist ", out.scalar_type());
  double lo = min.toDouble(), hi = max.toDouble();
  if (lo == hi && self.numel() > 0) {
    // The range comes from the data; the CPU kernel reads it to the host too, and
    // a non-finite range must raise.
    at::Tensor mm = at::stack({self.min(), self.max()}).to(at::kDouble, false, false)
                        .cpu();
    lo = mm[0].item<double>();
    hi = mm[1].item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc: range of [", lo, ", ", hi,
              "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  at::Tensor x = as_contiguous(self, at::kFloat);
  at::Tensor counts = at::zeros({bins}, self.options().dtype(at::kInt));
  guarded([&] {
    vkml::ops::histc(vkml_device(x), addr(x), x.numel(), addr(counts), bins, float(lo),
                     float(hi));
  });
  at::native::resize_output(out, {bins});
  out.copy_(counts);
  return out;
}

at::Tensor vk_histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max) {
  at::Tensor out = at::empty({0}, self.options());
  return vk_histc_out(self, bins, min, max, out);
}

// ------------------------------------------------------------- bincount

at::Tensor vk_bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights_opt,
                    int64_t minlength) {
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK(self.dim() == 1 && at::isIntegralType(self.scalar_type(), false),
              "bincount only supports 1-d non-negative integral inputs.");
  at::Tensor weights = weights_opt ? *weights_opt : at::Tensor();
  bool has_weights = weights.defined();
  if (has_weights) {
    TORCH_CHECK(weights.dim() == 1 && weights.size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
    TORCH_CHECK_NOT_IMPLEMENTED(weights.scalar_type() == at::kFloat,
                                "bincount on vkml supports float32 weights (other weights give "
                                "float64 on the CPU), got ", weights.scalar_type());
  }
  at::TensorOptions out_opt =
      self.options().dtype(has_weights ? at::kFloat : at::kLong);
  int64_t n = self.numel();
  int64_t nbins = minlength;
  if (n > 0) {
    // The output length depends on the data: one read of (min, max).
    at::Tensor mm = at::stack({self.min(), self.max()}).to(at::kLong).cpu();
    TORCH_CHECK(mm[0].item<int64_t>() >= 0,
                "bincount only supports 1-d non-negative integral inputs.");
    nbins = std::max(nbins, mm[1].item<int64_t>() + 1);
  }
  if (n == 0) return at::zeros({nbins}, out_opt);
  at::Tensor x = as_contiguous(self, at::kLong);
  at::Tensor w = has_weights ? weights.contiguous() : at::Tensor();
  at::Tensor bins = at::zeros({nbins}, self.options().dtype(has_weights ? at::kFloat : at::kInt));
  guarded([&] {
    vkml::ops::bincount(vkml_device(x), addr(x), has_weights ? addr(w) : 0, n, addr(bins), nbins);
  });
  return has_weights ? bins : bins.to(at::kLong);
}

at::Tensor& vk_bincount_out(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                         int64_t minlength, at::Tensor& out) {
  at::Tensor r = vk_bincount(self, weights, minlength);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("searchsorted.Tensor", TORCH_FN(vk_searchsorted));
  m.impl("searchsorted.Tensor_out", TORCH_FN(vk_searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(vk_searchsorted_scalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(vk_searchsorted_scalar_out));
  m.impl("bucketize.Tensor", TORCH_FN(vk_bucketize));
  m.impl("bucketize.Tensor_out", TORCH_FN(vk_bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(vk_bucketize_scalar));
  m.impl("bucketize.Scalar_out", TORCH_FN(vk_bucketize_scalar_out));
  m.impl("histc", TORCH_FN(vk_histc));
  m.impl("histc.out", TORCH_FN(vk_histc_out));
  m.impl("bincount", TORCH_FN(vk_bincount));
  m.impl("bincount.out", TORCH_FN(vk_bincount_out));
}

}  // namespace vkml_aten
