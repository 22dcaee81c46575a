// scaled_dot_product_attention. _fused_sdp_choice picks the "overrideable" backend
// for the shapes the fused kernel (vkml/ops/attention.h) takes: 4-d q, k, v of one
// float dtype, equal heads, head dims up to 128, no dropout, and a mask (if any) that
// needs no gradient. Everything else takes PyTorch's math path, which decomposes into
// native matmul, softmax, masking and dropout ops.
#include <ATen/SDPBackend.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "vkml/ops/attention.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::AttentionBias;
using vkml::ops::AttentionShape;

AttentionShape shape_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return AttentionShape{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
}

bool fused_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const std::optional<at::Tensor>& mask, double dropout_p) {
  if (dropout_p > 0.0) return false;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  if (!is_float_storage(q.scalar_type()) || k.scalar_type() != q.scalar_type() ||
      v.scalar_type() != q.scalar_type())
    return false;
  if (q.is_nested() || k.is_nested() || v.is_nested()) return false;
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || k.size(1) != q.size(1) ||
      v.size(1) != q.size(1) || v.size(2) != k.size(2) || k.size(3) != q.size(3))
    return false;
  if (mask.has_value() && mask->defined()) {
    const at::Tensor& m = *mask;
    if (m.scalar_type() != at::kBool && m.scalar_type() != q.scalar_type()) return false;
    if (m.dim() > 4 || (m.requires_grad() && at::GradMode::is_enabled())) return false;
    if (!at::is_expandable_to(m.sizes(), {q.size(0), q.size(1), q.size(2), k.size(2)}))
      return false;
  }
  if (q.scalar_type() != at::kFloat && !vkml_device(q).info().supports_fp16) return false;
  return vkml::ops::attention_supported(vkml_device(q), shape_of(q, k, v));
}

int64_t fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& mask, double dropout_p, bool,
                         std::optional<double>, bool) {
  auto& ctx = at::globalContext();
  if (ctx.userEnabledOverrideableSDP() && fused_applies(q, k, v, mask, dropout_p))
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  return static_cast<int64_t>(at::SDPBackend::math);
}

// The mask as an additive bias in q's dtype, viewed as [B, H, L, S] (broadcast dims
// have stride 0). `keep` holds the converted tensor alive.
AttentionBias bias_of(const at::Tensor& mask, const at::Tensor& q, int64_t S, at::Tensor& keep) {
  AttentionBias b;
  if (!mask.defined()) return b;
  keep = mask;
  if (mask.scalar_type() == at::kBool) {
    keep = at::zeros(mask.sizes(), q.options())
               .masked_fill_(mask.logical_not(), -std::numeric_limits<double>::infinity());
  }
  at::Tensor view = keep.expand({q.size(0), q.size(1), q.size(2), S});
  b.address = addr(view);
  int64_t last = 0;
  for (int d = 0; d < 4; ++d) {
    b.strides[d] = view.stride(d);
    last += (view.size(d) - 1) * view.stride(d);
  }
  b.span = last + 1;
  return b;
}

float scale_of(const at::Tensor& q, std::optional<double> scale) {
  return float(scale.has_value() ? *scale : 1.0 / std::sqrt(double(q.size(3))));
}

using ForwardResult = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt,
                                 c10::SymInt, at::Tensor, at::Tensor, at::Tensor>;

ForwardResult fused_attention(const at::Tensor& query, const at::Tensor& key,
                              const at::Tensor& value, const std::optional<at::Tensor>& attn_bias,
                              double dropout_p, bool is_causal, bool return_debug_mask,
                              std::optional<double> scale) {
  TORCH_CHECK(fused_applies(query, key, value, attn_bias, dropout_p),
              "vkml fused attention: unsupported inputs (it takes 4-d float q, k, v with equal "
              "heads, head dims up to 128, no dropout); use scaled_dot_product_attention, "
              "which picks the math path for these");
  at::Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous();
  AttentionShape s = shape_of(q, k, v);
  at::Tensor out = at::empty({s.B, s.H, s.L, s.Ev}, q.options());
  at::Tensor lse = at::empty({s.B, s.H, s.L}, q.options().dtype(at::kFloat));
  at::Tensor keep;
  AttentionBias bias = bias_of(attn_bias.value_or(at::Tensor()), q, s.S, keep);
  guarded([&] {
    vkml::ops::attention_forward(vkml_device(q), to_vkml(q.scalar_type()), s, addr(q), addr(k),
                                 addr(v), bias, is_causal, scale_of(q, scale), addr(out),
                                 addr(lse));
  });
  at::Tensor none = at::empty({0}, q.options().dtype(at::kLong));
  return {out,
          lse,
          none,
          none,
          c10::SymInt(s.L),
          c10::SymInt(s.S),
          none,
          none,
          at::empty({0}, q.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor&, const at::Tensor&,
    c10::SymInt, c10::SymInt, double dropout_p, bool is_causal, const at::Tensor&,
    const at::Tensor&, std::optional<double> scale) {
  if (!grad_out.defined()) return {};
  TORCH_CHECK(dropout_p == 0.0, "vkml fused attention: dropout is not supported");
  TORCH_CHECK(!(grad_input_mask[3] && attn_bias.defined()),
              "vkml fused attention: no gradient for attn_mask (scaled_dot_product_attention "
              "takes the math path when the mask requires grad)");
  at::Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous();
  at::Tensor g = grad_out.to(q.scalar_type()).contiguous();
  at::Tensor o = out.contiguous();
  AttentionShape s = shape_of(q, k, v);
  // delta = rowsum(dO * o): the softmax backward's correction, one per query row.
  at::Tensor delta = (g.to(at::kFloat) * o.to(at::kFloat)).sum(-1).contiguous();
  at::Tensor lse = logsumexp.to(at::kFloat).contiguous();
  at::Tensor dq = at::empty(q.sizes(), q.options());
  at::Tensor dk = at::empty(k.sizes(), k.options());
  at::Tensor dv = at::empty(v.sizes(), v.options());
  at::Tensor keep;
  AttentionBias bias = bias_of(attn_bias, q, s.S, keep);
  guarded([&] {
    vkml::ops::attention_backward(vkml_device(q), to_vkml(q.scalar_type()), s, addr(q), addr(k),
                                  addr(v), bias, is_causal, scale_of(q, scale), addr(g), addr(lse),
                                  addr(delta), addr(dq), addr(dk), addr(dv));
  });
  return {dq, dk, dv, at::Tensor()};
}

}  // namespace

// scaled_dot_product_attention asks this stub, not the _fused_sdp_choice op, which only
// answers torch._fused_sdp_choice.
int64_t fused_sdp_choice_stub_entry(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const std::optional<at::Tensor>& mask, double dropout_p,
                                    bool is_causal, std::optional<double> scale, bool gqa) {
  return fused_sdp_choice(q, k, v, mask, dropout_p, is_causal, scale, gqa);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_attention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward",
         TORCH_FN(fused_attention_backward));
}

}  // namespace vkml_aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &vkml_aten::fused_sdp_choice_stub_entry)
}  // namespace at::native
