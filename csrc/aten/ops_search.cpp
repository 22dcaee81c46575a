// Searching and counting: searchsorted, bucketize, isin, histc, bincount,
// histogram and histogramdd.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <string_view>

#include "fallback.h"
#include "op_helpers.h"
#include "sort_keys.h"
#include "vkml/ops/search.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// Comparisons run on float32 (floating dtypes) or int64 keys (integers, and float64
// through f64_keys); all exact for the dtypes accepted.
at::ScalarType search_key_type(const char* op, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16 ||
                                  t == at::kDouble || t == at::kLong || t == at::kInt ||
                                  t == at::kShort || t == at::kChar || t == at::kByte,
                              op, " on vkml does not support ", t);
  return at::isFloatingType(t) && t != at::kDouble ? at::kFloat : at::kLong;
}

// t as a contiguous tensor of `dtype`.
at::Tensor as_contiguous(const at::Tensor& t, at::ScalarType dtype) {
  if (t.scalar_type() == dtype && t.is_contiguous()) return t;
  at::Tensor c = at::empty(t.sizes(), t.options().dtype(dtype));
  c.copy_(t);
  return c;
}

// ------------------------------------------------- searchsorted, bucketize

at::Tensor& vk_searchsorted_out(const at::Tensor& boundaries, const at::Tensor& self,
                                bool out_int32, bool right, std::optional<std::string_view> side,
                                const std::optional<at::Tensor>& sorter_opt, at::Tensor& out) {
  if (side) {
    TORCH_CHECK(*side == "left" || *side == "right",
                "torch.searchsorted(): side can only be 'left' or 'right' but got ", *side);
    TORCH_CHECK(!right || *side == "right",
                "torch.searchsorted(): side and right can't be set "
                "to opposites, got side of left while right was True");
    right = *side == "right";
  }
  TORCH_CHECK(boundaries.dim() > 0,
              "torch.searchsorted(): boundaries tensor should have "
              "positive dimension, but got 0 dimension");
  bool one_d = boundaries.dim() == 1;
  if (!one_d) {
    bool match = self.dim() == boundaries.dim();
    for (int64_t k = 0; match && k + 1 < self.dim(); ++k)
      match = self.size(k) == boundaries.size(k);
    TORCH_CHECK(match,
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                "N-1 dimensions of boundaries tensor and input value tensor must match, but we got "
                "boundaries tensor ",
                boundaries.sizes(), " and input value tensor ", self.sizes());
  }
  at::Tensor sorter;
  if (sorter_opt && sorter_opt->defined()) {
    sorter = *sorter_opt;
    TORCH_CHECK(sorter.scalar_type() == at::kLong,
                "torch.searchsorted(): sorter must be a tensor "
                "of long dtype but got dtype ",
                sorter.scalar_type());
    TORCH_CHECK(sorter.sizes() == boundaries.sizes(),
                "torch.searchsorted(): boundary and sorter "
                "must have the same size, but got boundary tensor ",
                boundaries.sizes(), "and got sorter tensor ", sorter.sizes());
    sorter = sorter.contiguous();
  }
  at::ScalarType out_type = out_int32 ? at::kInt : at::kLong;
  TORCH_CHECK(out.scalar_type() == out_type,
              "torch.searchsorted(): output tensor's dtype is "
              "wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 "
              "flag is True, but we got output tensor's dtype ",
              out.scalar_type(), " and out_int32 flag is ", (out_int32 ? "True" : "False"));
  check_out_device(out);
  at::ScalarType common = at::promote_types(boundaries.scalar_type(), self.scalar_type());
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  at::ScalarType kt = search_key_type("searchsorted", common);
  // float64 values are searched as int64 keys of their bits, which order as they do.
  auto keys = [&](const at::Tensor& t) {
    return common == at::kDouble ? f64_keys(t.to(at::kDouble)) : as_contiguous(t, kt);
  };
  at::Tensor b = keys(boundaries), v = keys(self);
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
                             side, sorter, out);
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

// Integer histc, which CUDA has and the CPU lacks (MoE routers count tokens per expert
// with it, on int32, to avoid bincount's host wait): CUDA's bins, integer
// (x - min) * bins / (max - min) in int64 for min <= x <= max, the top edge in the last
// bin, counts in the input's dtype. Composed of native ops.
at::Tensor integral_histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                          const at::Scalar& max) {
  at::Tensor x = self.reshape(-1).to(at::kLong);
  int64_t lo = min.toLong(), hi = max.toLong();
  if (lo == hi && x.numel() > 0) {  // the range from the data, a host read as on CUDA
    at::Tensor mm = at::stack({x.min(), x.max()}).cpu();
    lo = mm[0].item<int64_t>();
    hi = mm[1].item<int64_t>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  at::Tensor in_range = x.ge(lo).logical_and_(x.le(hi));
  at::Tensor bin = x.sub(lo).mul_(bins).div_(hi - lo, "trunc").clamp_max_(bins - 1);
  bin.masked_fill_(in_range.logical_not(), 0);
  at::Tensor counts = at::zeros({bins}, x.options());
  counts.scatter_add_(0, bin, in_range.to(at::kLong));
  return counts.to(self.scalar_type());
}

at::Tensor& vk_histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                         const at::Scalar& max, at::Tensor& out) {
  TORCH_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins, " for dimension 0");
  if (self.scalar_type() == at::kDouble) {  // float64 bin edges: the counted CPU route
    return cpu_route<at::_ops::histc_out>(self, bins, min, max, out);
  }
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    TORCH_CHECK(out.scalar_type() == self.scalar_type(),
                "torch.histc: input tensor and hist tensor should have the same dtype, but got "
                "input ",
                self.scalar_type(), " and hist ", out.scalar_type());
    return write_out(out, integral_histc(self, bins, min, max));
  }
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(self.scalar_type()),
                              "\"histogram_cpu\" not implemented for '", self.scalar_type(), "'");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "torch.histc: input tensor and hist "
              "tensor should have the same dtype, but got input ",
              self.scalar_type(), " and hist ", out.scalar_type());
  double lo = min.toDouble(), hi = max.toDouble();
  if (lo == hi && self.numel() > 0) {
    // The range comes from the data; the CPU kernel reads it to the host too, and
    // a non-finite range must raise.
    at::Tensor mm = at::stack({self.min(), self.max()}).to(at::kDouble, false, false).cpu();
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
    vkml::ops::histc(vkml_device(x), addr(x), x.numel(), addr(counts), bins, float(lo), float(hi));
  });
  return write_out(out, counts);
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
  // The CPU kernel's dtype dispatch comes first: a float input is NotImplementedError.
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(self.scalar_type(), false),
                              "\"bincount_cpu\" not implemented for '", self.scalar_type(), "'");
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  at::Tensor weights = weights_opt ? *weights_opt : at::Tensor();
  bool has_weights = weights.defined();
  if (has_weights) {
    TORCH_CHECK(weights.dim() == 1 && weights.size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
    // Other weights give float64 counts on the CPU: summed in double by index_add below,
    // or on the counted CPU route where the device has no float64 arithmetic.
    if (weights.scalar_type() != at::kFloat && !vkml_device(self).info().supports_fp64) {
      return cpu_route<at::_ops::bincount>(self, weights_opt, minlength);
    }
    alert_atomic_adds("_bincount");  // the weighted sums
  }
  const bool double_counts = has_weights && weights.scalar_type() != at::kFloat;
  at::TensorOptions out_opt = self.options().dtype(double_counts ? at::kDouble
                                                   : has_weights ? at::kFloat
                                                                 : at::kLong);
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
  if (double_counts) return at::zeros({nbins}, out_opt).index_add_(0, x, weights.to(at::kDouble));
  at::Tensor w = has_weights ? weights.contiguous() : at::Tensor();
  at::Tensor bins = at::zeros({nbins}, self.options().dtype(has_weights ? at::kFloat : at::kInt));
  guarded([&] {
    vkml::ops::bincount(vkml_device(x), addr(x), has_weights ? addr(w) : 0, n, addr(bins), nbins);
  });
  return has_weights ? bins : bins.to(at::kLong);
}

at::Tensor& vk_bincount_out(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                            int64_t minlength, at::Tensor& out) {
  return write_out(out, vk_bincount(self, weights, minlength));
}

// ------------------------------------------------------------------ isin

// Membership in the promoted dtype. Small problems compare every pair (exact for
// every dtype, one broadcast compare and an any); larger ones sort the test
// elements and binary-search each element (float32 or int64 keys, exact for the
// dtypes the sort and search accept). NaN is never a member, as on the CPU.
void check_isin_dtype(at::ScalarType t) {
  TORCH_CHECK(t != at::kBool, "Unsupported input type encountered for isin(): ", t);
}

at::Tensor isin_tensor(const at::Tensor& elements, const at::Tensor& test, bool invert) {
  check_isin_dtype(elements.scalar_type());
  check_isin_dtype(test.scalar_type());
  at::ScalarType common = at::result_type(elements, test);
  at::Tensor e = elements.to(common);
  at::Tensor t = test.to(common).reshape({-1});
  at::Tensor found;
  if (t.numel() == 0 || elements.numel() == 0) {
    found = at::zeros(elements.sizes(), elements.options().dtype(at::kBool));
  } else if (e.numel() * t.numel() <= (int64_t(1) << 22)) {
    found = e.unsqueeze(-1).eq(t).any(-1);
  } else {
    // float64 sorts and searches as itself (through f64_keys inside both).
    at::ScalarType kt =
        common == at::kDouble
            ? common
            : search_key_type("isin", common == at::kBFloat16 ? at::kFloat : common);
    at::Tensor sorted = std::get<0>(at::sort(t.to(kt)));
    at::Tensor ek = e.to(kt).reshape({-1});
    at::Tensor pos = at::searchsorted(sorted, ek).clamp_max_(t.numel() - 1);
    found = sorted.index_select(0, pos).eq(ek).reshape(elements.sizes());
  }
  return invert ? found.logical_not() : found;
}
at::Tensor vk_isin_tt(const at::Tensor& elements, const at::Tensor& test, bool /*assume_unique*/,
                      bool invert) {
  return isin_tensor(elements, test, invert);
}
at::Tensor& vk_isin_tt_out(const at::Tensor& elements, const at::Tensor& test, bool assume_unique,
                           bool invert, at::Tensor& out) {
  return write_out_exact(out, vk_isin_tt(elements, test, assume_unique, invert));
}
at::Tensor vk_isin_ts(const at::Tensor& elements, const at::Scalar& test, bool /*assume_unique*/,
                      bool invert) {
  check_isin_dtype(elements.scalar_type());
  return invert ? elements.ne(test) : elements.eq(test);
}
at::Tensor& vk_isin_ts_out(const at::Tensor& elements, const at::Scalar& test, bool assume_unique,
                           bool invert, at::Tensor& out) {
  return write_out_exact(out, vk_isin_ts(elements, test, assume_unique, invert));
}
at::Tensor vk_isin_st(const at::Scalar& element, const at::Tensor& test, bool /*assume_unique*/,
                      bool invert) {
  at::Tensor e = at::scalar_tensor(element, test.options().dtype(element.type()));
  return isin_tensor(e, test, invert);
}
at::Tensor& vk_isin_st_out(const at::Scalar& element, const at::Tensor& test, bool assume_unique,
                           bool invert, at::Tensor& out) {
  return write_out_exact(out, vk_isin_st(element, test, assume_unique, invert));
}

// ------------------------------------------------------- histogram(dd)

// The CPU's histogramdd on an [M, N] input: an element counts when every
// coordinate lies within its dim's outer edges; its bin in each dim is the last
// edge <= the coordinate (the right edge belongs to the last bin), found by
// binary search (the CPU's linear guess is corrected against the same edges).
// The per-dim bins form one flat index; elements outside go to an extra slot
// that is dropped. Counts (or weights) are summed by the bincount kernel.
at::Tensor histogramdd_counts(const at::Tensor& x, const std::vector<at::Tensor>& edges,
                              const std::optional<at::Tensor>& weight, bool density) {
  int64_t m = x.size(0), n = x.size(1);
  std::vector<int64_t> bins;
  int64_t total = 1;
  for (const at::Tensor& e : edges) {
    bins.push_back(e.numel() - 1);
    total *= bins.back();
  }
  at::TensorOptions lopt = x.options().dtype(at::kLong);
  at::Tensor flat = at::zeros({m}, lopt);
  at::Tensor inside = at::ones({m}, x.options().dtype(at::kBool));
  for (int64_t d = 0; d < n; ++d) {
    at::Tensor xd = x.select(1, d).contiguous();
    const at::Tensor& e = edges[d];
    int64_t nb = bins[d];
    at::Tensor pos = at::searchsorted(e, xd, false, /*right=*/true).sub_(1).clamp_(0, nb - 1);
    inside.logical_and_(xd.ge(e.select(0, 0))).logical_and_(xd.le(e.select(0, nb)));
    flat.mul_(nb).add_(pos);
  }
  flat = at::where(inside, flat, total).contiguous();
  bool weighted = weight.has_value() && weight->defined();
  at::Tensor w = weighted ? weight->reshape({-1}).to(at::kFloat).contiguous() : at::Tensor();
  at::Tensor slots = at::zeros({total + 1}, x.options().dtype(weighted ? at::kFloat : at::kInt));
  if (weighted) alert_atomic_adds("histogramdd");
  if (m > 0) {
    guarded([&] {
      vkml::ops::bincount(vkml_device(x), addr(flat), weighted ? addr(w) : 0, m, addr(slots),
                          total + 1);
    });
  }
  at::Tensor hist = slots.narrow(0, 0, total).to(x.scalar_type()).reshape(bins);
  if (density) {
    hist.div_(hist.sum());
    for (int64_t d = 0; d < n; ++d) {
      std::vector<int64_t> shape(n, 1);
      shape[d] = bins[d];
      hist.div_(at::diff(edges[d]).reshape(shape));
    }
  }
  return hist;
}

// Outer edges per dim from `range` or the data's min and max (one read), widened
// by 0.5 each way when empty, as numpy and the CPU do.
std::vector<std::pair<double, double>> outer_edges(const at::Tensor& x,
                                                   std::optional<at::ArrayRef<double>> range) {
  int64_t n = x.size(1);
  std::vector<std::pair<double, double>> r(n, {0.0, 0.0});
  if (range.has_value()) {
    TORCH_CHECK(int64_t(range->size()) == 2 * n, "torch.histogramdd: for a ", n,
                "-dimensional histogram range should have ", 2 * n, " elements, but got ",
                range->size());
    for (int64_t d = 0; d < n; ++d) r[d] = {(*range)[2 * d], (*range)[2 * d + 1]};
  } else if (x.numel() > 0) {
    auto [lo, hi] = at::aminmax(x, 0);
    at::Tensor both = at::stack({lo, hi}).to(at::kDouble).cpu();
    for (int64_t d = 0; d < n; ++d) r[d] = {both[0][d].item<double>(), both[1][d].item<double>()};
  }
  for (int64_t d = 0; d < n; ++d) {
    auto& [lo, hi] = r[d];
    TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogramdd: dimension ", d,
                "'s range [", lo, ", ", hi, "] is not finite");
    TORCH_CHECK(lo <= hi, "torch.histogramdd: min should not exceed max, but got min ", lo, " max ",
                hi, " for dimension ", d);
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
  }
  return r;
}

void check_hist_input(const at::Tensor& x, const std::optional<at::Tensor>& weight) {
  TORCH_CHECK(x.dim() >= 2,
              "torch.histogramdd: input tensor should have at least 2 dimensions, "
              "but got ",
              x.dim());
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->scalar_type() == x.scalar_type(),
                "torch.histogramdd: if weight tensor "
                "is provided, it should have the same dtype as the input tensor");
    auto expected = x.sizes().slice(0, x.dim() - 1);
    TORCH_CHECK(weight->sizes() == expected,
                "torch.histogramdd: if weight tensor is provided it "
                "should have the same shape as the input tensor excluding its innermost "
                "dimension, but got input with shape ",
                x.sizes(), " and weight with shape ", weight->sizes());
  }
}

std::vector<at::Tensor> bin_edges_from_counts(const at::Tensor& x, at::IntArrayRef bins,
                                              std::optional<at::ArrayRef<double>> range) {
  at::Tensor x2 = x.reshape({-1, x.size(-1)});
  TORCH_CHECK(int64_t(bins.size()) == x2.size(1), "torch.histogramdd: expected ", x2.size(1),
              " sequences of bin edges for a ", x2.size(1), "-dimensional histogram but got ",
              bins.size());
  auto outer = outer_edges(x2, range);
  std::vector<at::Tensor> edges;
  for (size_t d = 0; d < bins.size(); ++d) {
    TORCH_CHECK(bins[d] > 0, "torch.histogramdd(): bins must be > 0, but got ", bins[d],
                " for dimension ", d);
    edges.push_back(at::linspace(outer[d].first, outer[d].second, bins[d] + 1, x.options()));
  }
  return edges;
}

// histogram / histogramdd take float32 natively; float64 goes the counted CPU
// route (which also raises the CPU's errors for other dtypes).
bool native_hist(const at::Tensor& x) { return x.scalar_type() == at::kFloat; }

std::vector<at::Tensor> vk_histogramdd_bin_edges(const at::Tensor& self, at::IntArrayRef bins,
                                                 std::optional<at::ArrayRef<double>> range,
                                                 const std::optional<at::Tensor>& weight,
                                                 bool density) {
  if (!native_hist(self))
    return cpu_route<at::_ops::_histogramdd_bin_edges>(self, bins, range, weight, density);
  check_hist_input(self, weight);
  return bin_edges_from_counts(self, bins, range);
}
at::Tensor vk_histogramdd_from_bin_cts(const at::Tensor& self, at::IntArrayRef bins,
                                       std::optional<at::ArrayRef<double>> range,
                                       const std::optional<at::Tensor>& weight, bool density) {
  if (!native_hist(self))
    return cpu_route<at::_ops::_histogramdd_from_bin_cts>(self, bins, range, weight, density);
  check_hist_input(self, weight);
  auto edges = bin_edges_from_counts(self, bins, range);
  return histogramdd_counts(self.reshape({-1, self.size(-1)}), edges, weight, density);
}
at::Tensor vk_histogramdd_from_bin_tensors(const at::Tensor& self, at::TensorList bins,
                                           const std::optional<at::Tensor>& weight, bool density) {
  if (!native_hist(self))
    return cpu_route<at::_ops::_histogramdd_from_bin_tensors>(self, bins, weight, density);
  check_hist_input(self, weight);
  TORCH_CHECK(int64_t(bins.size()) == self.size(-1), "torch.histogramdd: expected ", self.size(-1),
              " sequences of bin edges for a ", self.size(-1), "-dimensional histogram but got ",
              bins.size());
  std::vector<at::Tensor> edges;
  for (const at::Tensor& b : bins) {
    TORCH_CHECK(b.dim() == 1,
                "torch.histogramdd: bins tensor should have one dimension, but "
                "got ",
                b.dim(), " dimensions in the bins tensor");
    TORCH_CHECK(b.numel() > 0,
                "torch.histogramdd: bins tensor should have at least 1 element, "
                "but got ",
                b.numel(), " elements");
    edges.push_back(b.to(self.scalar_type()).contiguous());
  }
  return histogramdd_counts(self.reshape({-1, self.size(-1)}), edges, weight, density);
}

// histogram: the one-dimensional case of histogramdd over the flattened input.
std::tuple<at::Tensor&, at::Tensor&> vk_histogram_bins_out(const at::Tensor& self,
                                                           const at::Tensor& bins,
                                                           const std::optional<at::Tensor>& weight,
                                                           bool density, at::Tensor& hist,
                                                           at::Tensor& bin_edges) {
  TORCH_CHECK(
      hist.scalar_type() == self.scalar_type() && bin_edges.scalar_type() == self.scalar_type(),
      "torch.histogram: input tensor, hist and bin_edges tensors should have the same dtype, ",
      "but got input ", self.scalar_type(), ", hist ", hist.scalar_type(), " and bin_edges ",
      bin_edges.scalar_type());
  std::optional<at::Tensor> w;
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->sizes() == self.sizes(),
                "torch.histogram: if weight tensor is provided "
                "it should have the same shape as the input tensor");
    w = weight->reshape({-1});
  }
  at::Tensor h = vk_histogramdd_from_bin_tensors(self.reshape({-1, 1}), {bins}, w, density);
  write_out(hist, h);
  write_out(bin_edges, bins);
  return {hist, bin_edges};
}
std::tuple<at::Tensor, at::Tensor> vk_histogram_bins(const at::Tensor& self, const at::Tensor& bins,
                                                     const std::optional<at::Tensor>& weight,
                                                     bool density) {
  at::Tensor hist = at::empty({0}, self.options()), edges = at::empty({0}, bins.options());
  vk_histogram_bins_out(self, bins, weight, density, hist, edges);
  return {hist, edges};
}
std::tuple<at::Tensor&, at::Tensor&> vk_histogram_ct_out(const at::Tensor& self, int64_t bins,
                                                         std::optional<at::ArrayRef<double>> range,
                                                         const std::optional<at::Tensor>& weight,
                                                         bool density, at::Tensor& hist,
                                                         at::Tensor& bin_edges) {
  if (!native_hist(self)) {
    return cpu_route<at::_ops::histogram_bin_ct_out>(self, bins, range, weight, density, hist,
                                                     bin_edges);
  }
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  at::Tensor edges = bin_edges_from_counts(self.reshape({-1, 1}), {bins}, range)[0];
  return vk_histogram_bins_out(self, edges, weight, density, hist, bin_edges);
}
std::tuple<at::Tensor, at::Tensor> vk_histogram_ct(const at::Tensor& self, int64_t bins,
                                                   std::optional<at::ArrayRef<double>> range,
                                                   const std::optional<at::Tensor>& weight,
                                                   bool density) {
  at::Tensor hist = at::empty({0}, self.options()), edges = at::empty({0}, self.options());
  vk_histogram_ct_out(self, bins, range, weight, density, hist, edges);
  return {hist, edges};
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
  m.impl("isin.Tensor_Tensor", TORCH_FN(vk_isin_tt));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(vk_isin_tt_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(vk_isin_ts));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(vk_isin_ts_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(vk_isin_st));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(vk_isin_st_out));
  m.impl("histogram.bins_tensor", TORCH_FN(vk_histogram_bins));
  m.impl("histogram.bins_tensor_out", TORCH_FN(vk_histogram_bins_out));
  m.impl("histogram.bin_ct", TORCH_FN(vk_histogram_ct));
  m.impl("histogram.bin_ct_out", TORCH_FN(vk_histogram_ct_out));
  m.impl("_histogramdd_bin_edges", TORCH_FN(vk_histogramdd_bin_edges));
  m.impl("_histogramdd_from_bin_cts", TORCH_FN(vk_histogramdd_from_bin_cts));
  m.impl("_histogramdd_from_bin_tensors", TORCH_FN(vk_histogramdd_from_bin_tensors));
}

}  // namespace vkml_aten
