// scaled_dot_product_attention. _fused_sdp_choice picks the "overrideable" backend
// for the shapes the fused kernel (vkml/ops/attention.h) takes: 4-d q, k, v of one
// float dtype, equal heads (or, with enable_gqa, k and v heads dividing q's), head dims
// up to 128, dropout_p below 1, and a mask (if any) that needs no gradient. Everything else
// takes PyTorch's math path, which decomposes into native matmul, softmax, masking and
// dropout ops. Dropout draws its mask in the kernels from the device's generator (seed
// and offset, returned to autograd as the philox tensors), and the backward redraws it.
#include <ATen/SDPBackend.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "functorch_state.h"
#include "generator.h"
#include "op_helpers.h"
#include "vkml/ops/attention.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::AttentionBias;
using vkml::ops::AttentionDropout;
using vkml::ops::AttentionShape;

AttentionShape shape_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  AttentionShape s{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
  s.Hkv = k.size(1);
  return s;
}

// gqa: k and v may have fewer heads than q, a divisor of q's (enable_gqa).
bool fused_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const std::optional<at::Tensor>& mask, double dropout_p, bool gqa) {
  if (!(dropout_p >= 0.0 && dropout_p < 1.0)) return false;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  if (!is_float_storage(q.scalar_type()) || k.scalar_type() != q.scalar_type() ||
      v.scalar_type() != q.scalar_type())
    return false;
  if (q.is_nested() || k.is_nested() || v.is_nested()) return false;
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || v.size(1) != k.size(1) ||
      v.size(2) != k.size(2) || k.size(3) != q.size(3))
    return false;
  const bool grouped = gqa && k.size(1) > 0 && q.size(1) % k.size(1) == 0;
  if (k.size(1) != q.size(1) && !grouped) return false;
  if (mask.has_value() && mask->defined()) {
    const at::Tensor& m = *mask;
    if (m.scalar_type() != at::kBool && m.scalar_type() != q.scalar_type()) return false;
    if (m.dim() > 4 || (m.requires_grad() && at::GradMode::is_enabled())) return false;
    if (!at::is_expandable_to(m.sizes(), {q.size(0), q.size(1), q.size(2), k.size(2)}))
      return false;
  }
  if (q.scalar_type() != at::kFloat && !vkml_device(q).info().supports_fp16) return false;
  // A thread walks the keys (backward, also the queries) in a loop: past the loop limit of
  // Mesa 22.3's lavapipe that stops short, silently, so there such lengths take the math
  // path (matrix products and softmax, on the device too).
  if (past_loop_limit(q, std::max(q.size(2), k.size(2)))) return false;
  return vkml::ops::attention_supported(vkml_device(q), shape_of(q, k, v));
}

// The fused op has no batching rule (torch.func.vmap) and no forward-mode derivative
// (torch.autograd.forward_ad, torch.func.jvp) in PyTorch, so attention under either takes
// the math path, whose ops have both. (CUDA has batching rules for its fused kernels; its
// forward mode fails.) Without nlohmann/json at build time, nested calls such as
// vmap(grad(f)) raise (README, Troubleshooting).
bool needs_math_path(const at::Tensor& t) {
  if (!t.defined()) return false;
  return t.key_set().has(c10::DispatchKey::FuncTorchBatched) || has_tangent(t);
}

int64_t fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& mask, double dropout_p, bool,
                         std::optional<double>, bool gqa) {
  auto& ctx = at::globalContext();
  if (under_vmap_or_jvp() || needs_math_path(q) || needs_math_path(k) || needs_math_path(v) ||
      (mask.has_value() && needs_math_path(*mask)))
    return static_cast<int64_t>(at::SDPBackend::math);
  if (ctx.userEnabledOverrideableSDP() && fused_applies(q, k, v, mask, dropout_p, gqa))
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

// m when x[b, h, r, d] sits at (b * rows + r) * R + h * dim + d with R = m * H * dim,
// m in 1..255 (vkml::ops::AttentionLayout), else 0.
int token_major_multiple(const at::Tensor& x) {
  const int64_t B = x.size(0), H = x.size(1), rows = x.size(2), dim = x.size(3);
  if (dim > 1 && x.stride(3) != 1) return 0;
  if (H > 1 && x.stride(1) != dim) return 0;
  if (rows == 1) return x.transpose(1, 2).is_contiguous() ? 1 : 0;
  const int64_t row_stride = x.stride(2);
  if (row_stride <= 0 || row_stride % (H * dim) != 0 || row_stride / (H * dim) > 255) return 0;
  if (B > 1 && x.stride(0) != rows * row_stride) return 0;
  return int(row_stride / (H * dim));
}

// The kernels read a [B, H, rows, dim] operand in place when it is contiguous or
// token-major (x.view(B, rows, H, dim).transpose(1, 2) as models build q, k and v, or
// such a slice of a packed qkv projection); anything else is copied. Sets `layout`
// (the AttentionLayout entry) accordingly.
at::Tensor in_place_or_copy(const at::Tensor& x, int& layout) {
  layout = 0;
  if (x.is_contiguous()) return x;
  layout = token_major_multiple(x);
  return layout ? x : x.contiguous();
}

// A [B, H, rows, dim] result stored token-major.
at::Tensor empty_token_major(int64_t B, int64_t H, int64_t rows, int64_t dim,
                             const at::TensorOptions& options) {
  return at::empty({B, rows, H, dim}, options).transpose(1, 2);
}

// The results take the strides that PyTorch's meta functions give them
// (torch/_meta_registrations.py), which torch.compile traces with: the forward's
// output those of alloc_with_matching_layout(query, ...) (empty_like(query) when
// the shapes agree, else query's dim order by decreasing stride over the output's
// sizes), each gradient empty_like(its input). For a model's token-major q
// (x.view(B, L, H, E).transpose(1, 2), or a slice of a packed qkv projection) that is
// token-major; for contiguous q contiguous.
at::Tensor empty_in_layout_of(const at::Tensor& x, int64_t last_dim) {
  if (x.size(3) == last_dim) return at::empty_like(x);
  std::array<int64_t, 4> order{0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
  std::array<int64_t, 4> sizes{x.size(0), x.size(1), x.size(2), last_dim}, strides{};
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    strides[order[i]] = stride;
    stride *= sizes[order[i]];
  }
  return at::empty_strided(sizes, strides, x.options());
}

// Where the kernel writes a result: into `result` itself when its layout is the one the
// kernel writes (token-major with `token_major`, else contiguous; the common case),
// else into a buffer of that layout that `settle` copies into `result`.
at::Tensor kernel_target(const at::Tensor& result, bool token_major) {
  const bool fits = token_major ? token_major_multiple(result) == 1 : result.is_contiguous();
  if (fits) return result;
  return token_major ? empty_token_major(result.size(0), result.size(1), result.size(2),
                                         result.size(3), result.options())
                     : at::empty(result.sizes(), result.options());
}

const at::Tensor& settle(const at::Tensor& result, const at::Tensor& written) {
  if (!written.is_same(result)) result.copy_(written);
  return result;
}

// A forward's dropout: its p and the default generator's seed and next offset, which
// the forward returns as the philox tensors (CPU scalars: the backward reads them
// without waiting for the device).
AttentionDropout take_dropout(const at::Tensor& q, double p) {
  AttentionDropout d;
  d.p = p;
  if (p == 0.0) return d;
  const auto [seed, offset] = get_generator(std::nullopt, q.device().index())->take_draw();
  d.seed = seed;
  d.offset = offset;
  return d;
}

AttentionDropout dropout_of(double p, const at::Tensor& seed, const at::Tensor& offset) {
  AttentionDropout d;
  d.p = p;
  if (p == 0.0) return d;
  TORCH_CHECK(seed.numel() == 1 && offset.numel() == 1,
              "vkml fused attention: dropout's backward needs the forward's philox seed and "
              "offset");
  d.seed = uint64_t(seed.item<int64_t>());
  d.offset = uint64_t(offset.item<int64_t>());
  return d;
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
  // Reached through scaled_dot_product_attention's choice, which passed k and v with
  // fewer heads only under enable_gqa.
  TORCH_CHECK(fused_applies(query, key, value, attn_bias, dropout_p, /*gqa=*/true),
              "vkml fused attention: unsupported inputs (it takes 4-d float q, k, v with equal "
              "or grouped heads, head dims up to 128, dropout_p below 1); use "
              "scaled_dot_product_attention, which picks the math path for these");
  AttentionShape s = shape_of(query, key, value);
  at::Tensor q = in_place_or_copy(query, s.layout.q), k = in_place_or_copy(key, s.layout.k),
             v = in_place_or_copy(value, s.layout.v);
  at::Tensor out = empty_in_layout_of(query, s.Ev);
  // Token-major where out is (or where it is neither layout: the copy's source is then
  // the model's usual layout), contiguous where it is contiguous.
  s.layout.o = !out.is_contiguous();
  at::Tensor o = kernel_target(out, s.layout.o);
  at::Tensor lse = at::empty({s.B, s.H, s.L}, q.options().dtype(at::kFloat));
  at::Tensor keep;
  AttentionBias bias = bias_of(attn_bias.value_or(at::Tensor()), q, s.S, keep);
  const AttentionDropout dropout = take_dropout(q, dropout_p);
  guarded([&] {
    vkml::ops::attention_forward(vkml_device(q), to_vkml(q.scalar_type()), s, addr(q), addr(k),
                                 addr(v), bias, is_causal, scale_of(q, scale), dropout, addr(o),
                                 addr(lse));
  });
  settle(out, o);
  at::Tensor none = at::empty({0}, q.options().dtype(at::kLong));
  at::Tensor seed = none, offset = none;
  if (dropout.p > 0.0) {
    seed = at::scalar_tensor(int64_t(dropout.seed), at::dtype(at::kLong));
    offset = at::scalar_tensor(int64_t(dropout.offset), at::dtype(at::kLong));
  }
  return {out,
          lse,
          none,
          none,
          c10::SymInt(s.L),
          c10::SymInt(s.S),
          seed,
          offset,
          at::empty({0}, q.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor&, const at::Tensor&,
    c10::SymInt, c10::SymInt, double dropout_p, bool is_causal, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, std::optional<double> scale) {
  if (!grad_out.defined()) return {};
  const AttentionDropout dropout = dropout_of(dropout_p, philox_seed, philox_offset);
  TORCH_CHECK(!(grad_input_mask[3] && attn_bias.defined()),
              "vkml fused attention: no gradient for attn_mask (scaled_dot_product_attention "
              "takes the math path when the mask requires grad)");
  AttentionShape s = shape_of(query, key, value);
  at::Tensor q = in_place_or_copy(query, s.layout.q), k = in_place_or_copy(key, s.layout.k),
             v = in_place_or_copy(value, s.layout.v);
  at::Tensor g = in_place_or_copy(grad_out.to(q.scalar_type()), s.layout.g);
  const at::Tensor& o = out;
  // delta = rowsum(dO * o): the softmax backward's correction, one per query row.
  at::Tensor delta = (g.to(at::kFloat) * o.to(at::kFloat)).sum(-1).contiguous();
  at::Tensor lse = logsumexp.to(at::kFloat).contiguous();
  // Each gradient in its input's layout (empty_like, as the meta function gives it), so
  // the views it flows back through stay free. The kernel writes a gradient token-major
  // where it read the input in place token-major, else contiguous.
  at::Tensor dq = at::empty_like(query), dk = at::empty_like(key), dv = at::empty_like(value);
  at::Tensor dq_k = kernel_target(dq, s.layout.q != 0), dk_k = kernel_target(dk, s.layout.k != 0),
             dv_k = kernel_target(dv, s.layout.v != 0);
  at::Tensor keep;
  AttentionBias bias = bias_of(attn_bias, q, s.S, keep);
  guarded([&] {
    vkml::ops::attention_backward(vkml_device(q), to_vkml(q.scalar_type()), s, addr(q), addr(k),
                                  addr(v), bias, is_causal, scale_of(q, scale), dropout, addr(g),
                                  addr(lse), addr(delta), addr(dq_k), addr(dk_k), addr(dv_k));
  });
  return {settle(dq, dq_k), settle(dk, dk_k), settle(dv, dv_k), at::Tensor()};
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
