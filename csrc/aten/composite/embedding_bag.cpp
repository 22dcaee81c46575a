// embedding_bag (sum / mean / max, per_sample_weights, padding_idx) and its
// backward from native gathers, index_add and scatter_reduce. The bag of each
// index comes from a binary search of the offsets. float16 / bfloat16 compute in
// float32; sparse gradients are vkml sparse tensors (ops_sparse.cpp).
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <limits>
#include <tuple>

#include "aten/fallback.h"
#include "aten/vkml_tensor.h"
#include "vkml/ops/value_check.h"
#include "vkml/shaders/device_error.h"

namespace vkml_aten {
namespace {

using Opt = std::optional<at::Tensor>;
constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

struct Bags {
  at::Tensor offset2bag;  // [n] int64: the bag of each index
  at::Tensor valid;       // [n] bool: not padding_idx
  at::Tensor bag_size;    // [bags] int64: non-padding indices per bag
  int64_t bags = 0;
};

Bags make_bags(const at::Tensor& indices, const at::Tensor& offsets, bool include_last_offset,
               int64_t padding_idx) {
  TORCH_CHECK(indices.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ",
              indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ",
              offsets.dim());
  Bags b;
  b.bags = offsets.numel() - (include_last_offset ? 1 : 0);
  TORCH_CHECK(b.bags >= 0, "include_last_offset: number of offsets should be at least 1");
  int64_t n = indices.numel();
  at::Tensor idx = indices.to(at::kLong);
  at::Tensor all_offs = offsets.to(at::kLong).contiguous();
  if (int64_t k = all_offs.numel(); k > 0) {
    // The CPU's checks of the first and last offsets, made on the device: raised at
    // the next read of the device, with no wait here.
    vkml::Device& dev = vkml_device(all_offs);
    guarded([&] {
      vkml::ops::check_int_range(dev, ref(all_offs.narrow(0, 0, 1)), 0, 0,
                                 DEVICE_ERROR_BAG_FIRST_OFFSET, DEVICE_ERROR_BAG_FIRST_OFFSET);
      vkml::ops::check_int_range(dev, ref(all_offs.narrow(0, k - 1, 1)),
                                 std::numeric_limits<int64_t>::min(), n,
                                 DEVICE_ERROR_BAG_LAST_OFFSET, DEVICE_ERROR_BAG_LAST_OFFSET, n);
    });
  }
  at::Tensor offs = all_offs.narrow(0, 0, b.bags);
  at::Tensor pos = at::arange(n, idx.options());
  b.offset2bag = b.bags == 0 ? at::zeros({n}, idx.options())
                             : (at::searchsorted(offs, pos, false, true) - 1).clamp_min(0);
  b.valid = padding_idx >= 0 ? idx != padding_idx : at::ones({n}, idx.options().dtype(at::kBool));
  b.bag_size =
      at::zeros({b.bags}, idx.options()).index_add_(0, b.offset2bag, b.valid.to(at::kLong));
  return b;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> vk_embedding_bag(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
    bool /*scale_grad_by_freq: backward only*/, int64_t mode, bool /*sparse*/, const Opt& psw,
    bool include_last_offset, int64_t padding_idx) {
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ",
              weight.dim());
  TORCH_CHECK(mode >= kSum && mode <= kMax, "embedding_bag: unknown mode ", mode);
  bool has_psw = psw.has_value() && psw->defined();
  TORCH_CHECK(!has_psw || mode == kSum,
              "embedding_bag: per_sample_weights was not None. "
              "per_sample_weights is only supported for mode='sum' (got mode='",
              mode == kMean ? "mean" : "max", "'). Please open a feature request on GitHub.");
  TORCH_CHECK(at::isFloatingType(weight.scalar_type()),
              "embedding_bag: expected a floating-point weight, got ", weight.scalar_type());
  Bags b = make_bags(indices, offsets, include_last_offset, padding_idx);
  at::Tensor w = weight.to(at::toOpMathType(weight.scalar_type()));
  at::Tensor idx = indices.to(at::kLong);
  int64_t n = idx.numel(), d = w.size(1);
  at::Tensor vals = w.index_select(0, idx);
  at::Tensor out, max_indices;
  if (mode == kMax) {
    at::Tensor ninf = at::full({}, -std::numeric_limits<double>::infinity(), w.options());
    vals = at::where(b.valid.unsqueeze(1), vals, ninf);
    at::Tensor bag_of = b.offset2bag.unsqueeze(1).expand({n, d});
    out = at::full({b.bags, d}, -std::numeric_limits<double>::infinity(), w.options())
              .scatter_reduce_(0, bag_of, vals, "amax");
    // The first position reaching the maximum, as the CPU's strict comparison keeps.
    at::Tensor pos = at::arange(n, idx.options()).unsqueeze(1).expand({n, d});
    at::Tensor hit = (vals == out.index_select(0, b.offset2bag)).logical_and_(b.valid.unsqueeze(1));
    at::Tensor cand = at::where(hit, pos, at::full({}, n, idx.options()));
    at::Tensor first =
        at::full({b.bags, d}, n, idx.options()).scatter_reduce_(0, bag_of, cand, "amin");
    at::Tensor ext = at::cat({idx, at::zeros({1}, idx.options())});
    max_indices = ext.index_select(0, first.reshape({-1})).view({b.bags, d});
    out = at::where(first == n, at::zeros({}, w.options()), out);
  } else {
    at::Tensor scale = b.valid.to(w.scalar_type());
    if (has_psw) scale = scale * psw->to(w.scalar_type());
    out =
        at::zeros({b.bags, d}, w.options()).index_add_(0, b.offset2bag, vals * scale.unsqueeze(1));
    if (mode == kMean) out = out / b.bag_size.clamp_min(1).unsqueeze(1).to(w.scalar_type());
    max_indices = b.bag_size.clone();
  }
  return {out.to(weight.scalar_type()), b.offset2bag, b.bag_size, max_indices};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> vk_embedding_bag_out(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, bool sgf,
    int64_t mode, bool sparse, const Opt& psw, bool include_last_offset, int64_t padding_idx,
    at::Tensor& out0, at::Tensor& out1, at::Tensor& out2, at::Tensor& out3) {
  auto r = vk_embedding_bag(weight, indices, offsets, sgf, mode, sparse, psw, include_last_offset,
                            padding_idx);
  at::Tensor* outs[4] = {&out0, &out1, &out2, &out3};
  at::Tensor vals[4] = {std::get<0>(r), std::get<1>(r), std::get<2>(r), std::get<3>(r)};
  for (int i = 0; i < 4; ++i) {
    at::native::resize_output(*outs[i], vals[i].sizes());
    outs[i]->copy_(vals[i]);
  }
  return {out0, out1, out2, out3};
}

at::Tensor vk_embedding_bag_backward(const at::Tensor& grad, const at::Tensor& indices,
                                     const at::Tensor& offsets, const at::Tensor& offset2bag,
                                     const at::Tensor& bag_size, const at::Tensor& max_indices,
                                     int64_t num_weights, bool scale_grad_by_freq, int64_t mode,
                                     bool sparse, const Opt& psw, int64_t padding_idx) {
  // A sparse COO gradient: ATen's composition (index_select per bag, the mode's
  // scaling, a sparse tensor of one entry per index), on vkml's ops and sparse tensors.
  if (sparse) {
    return at::_embedding_bag_sparse_backward(grad, indices, offsets, offset2bag, bag_size,
                                              num_weights, scale_grad_by_freq, mode, psw,
                                              padding_idx);
  }
  // The frequency scaling does not match the CPU yet: the counted CPU route.
  if (scale_grad_by_freq) {
    return cpu_route<at::_ops::_embedding_bag_backward>(
        grad, indices, offsets, offset2bag, bag_size, max_indices, num_weights, scale_grad_by_freq,
        mode, sparse, psw, padding_idx);
  }
  at::Tensor g = grad.to(at::toOpMathType(grad.scalar_type()));
  at::Tensor idx = indices.to(at::kLong);
  int64_t d = g.size(1);
  at::Tensor gw = at::zeros({num_weights, d}, g.options());
  if (idx.numel() == 0 || d == 0) return gw.to(grad.scalar_type());
  at::Tensor valid =
      padding_idx >= 0 ? idx != padding_idx : at::ones(idx.sizes(), idx.options().dtype(at::kBool));
  if (mode == kMax) {
    at::Tensor nonempty = (bag_size > 0).unsqueeze(1).to(g.scalar_type());
    at::Tensor flat = max_indices * d + at::arange(d, idx.options()).unsqueeze(0);
    gw.view({-1}).index_add_(0, flat.reshape({-1}), (g * nonempty).reshape({-1}));
    return gw.to(grad.scalar_type());
  }
  at::Tensor scale = valid.to(g.scalar_type());
  if (psw.has_value() && psw->defined()) scale = scale * psw->to(g.scalar_type());
  if (mode == kMean) {
    scale = scale / bag_size.index_select(0, offset2bag).clamp_min(1).to(g.scalar_type());
  }
  gw.index_add_(0, idx, g.index_select(0, offset2bag) * scale.unsqueeze(1));
  return gw.to(grad.scalar_type());
}

at::Tensor vk_psw_backward(const at::Tensor& grad, const at::Tensor& weight,
                           const at::Tensor& indices, const at::Tensor& /*offsets*/,
                           const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx) {
  TORCH_CHECK(mode == kSum,
              "embedding_bag_backward: per_sample_weights only supported for "
              "mode='sum'");
  at::ScalarType t = at::toOpMathType(grad.scalar_type());
  at::Tensor idx = indices.to(at::kLong);
  at::Tensor r =
      (grad.to(t).index_select(0, offset2bag) * weight.to(t).index_select(0, idx)).sum(1);
  if (padding_idx >= 0) r = r * (idx != padding_idx).to(t);
  return r.to(grad.scalar_type());
}
at::Tensor& vk_psw_backward_out(const at::Tensor& grad, const at::Tensor& weight,
                                const at::Tensor& indices, const at::Tensor& offsets,
                                const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx,
                                at::Tensor& out) {
  at::Tensor r = vk_psw_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", TORCH_FN(vk_embedding_bag));
  m.impl("_embedding_bag.out", TORCH_FN(vk_embedding_bag_out));
  m.impl("_embedding_bag_forward_only", TORCH_FN(vk_embedding_bag));
  m.impl("_embedding_bag_forward_only.out", TORCH_FN(vk_embedding_bag_out));
  m.impl("_embedding_bag_backward", TORCH_FN(vk_embedding_bag_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(vk_psw_backward));
  m.impl("_embedding_bag_per_sample_weights_backward.out", TORCH_FN(vk_psw_backward_out));
}

}  // namespace vkml_aten
