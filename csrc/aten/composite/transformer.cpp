// torch.nn's inference fast path for attention on vkml: nn.MultiheadAttention and
// nn.TransformerEncoderLayer in eval mode under no_grad (batch_first) call the fused ops
// _native_multi_head_attention and _transformer_encoder_layer_fwd, and
// nn.TransformerEncoder packs a padded batch into a nested tensor first
// (_nested_tensor_from_mask) and unpacks the result (to_padded_tensor). Without these,
// each layer ran on the CPU fallback, and the nested path raised.
//
// The ops are composed of vkml's own (linear, the fused attention, layer_norm), with the
// CPU's semantics: a mask is "masked out" where it is nonzero (a float mask of 0 and
// -inf, as nn.MultiheadAttention passes, included); mask type 0 is [L, S], 1 a key
// padding mask [B, S], 2 the scores' own [B, H, L, S]. A nested batch runs padded, with
// its padding as a key padding mask, and only its rows are kept: positions past a
// sequence's length come back as padding, as on the CPU.
#include <ATen/NestedTensorImpl.h>
#include <ATen/ops/to_padded_tensor_native.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

namespace vkml_aten {
namespace {

// [B, T, D] -> [B, H, T, D / H]
at::Tensor split_heads(const at::Tensor& t, int64_t num_head) {
  return t.view({t.size(0), t.size(1), num_head, t.size(2) / num_head}).transpose(1, 2);
}

// The boolean "masked out" mask, broadcastable to the scores [B, H, L, S].
at::Tensor score_mask(const at::Tensor& mask, std::optional<int64_t> mask_type,
                      at::IntArrayRef scores) {
  at::Tensor m = mask.scalar_type() == at::kBool ? mask : mask.ne(0);
  const int64_t B = scores[0], L = scores[2], S = scores[3];
  switch (mask_type.value_or(-1)) {
    case 0:
      TORCH_CHECK(m.dim() == 2 && m.size(0) == L && m.size(1) == S,
                  "For mask_type == 0 mask shape should be (L, L)");
      return m.view({1, 1, L, S});
    case 1:
      TORCH_CHECK(m.dim() == 2 && m.size(0) == B && m.size(1) == S,
                  "For mask_type == 1 mask shape should be (B, L)");
      return m.view({B, 1, 1, S});
    case 2:
      TORCH_CHECK(m.sizes() == scores, "For mask_type == 2 mask shape should match input shape");
      return m;
    default:
      return m;  // no type: broadcast as it is
  }
}

struct Padded {
  at::Tensor dense;         // [B, L, E], zeros past each length
  at::Tensor nested_sizes;  // the nested tensor's [B, 2] (length, E), on the CPU
  at::Tensor valid;         // [B, L] bool on the device: inside a sequence
};

at::Tensor positions_within(const at::Tensor& lengths_cpu, int64_t max_len,
                            const at::TensorOptions& device) {
  at::Tensor steps = at::arange(max_len, lengths_cpu.options()).unsqueeze(0);
  return steps.lt(lengths_cpu.unsqueeze(1)).to(device.dtype(at::kBool));
}

Padded pad_nested(const at::Tensor& nt) {
  const auto* impl = at::native::get_nested_tensor_impl(nt);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(impl),
              "vkml: nested tensors in the transformer fast path must be contiguous");
  at::Tensor sizes = impl->get_nested_sizes();
  TORCH_CHECK(sizes.dim() == 2 && sizes.size(1) == 2,
              "vkml: the transformer fast path takes nested [length, embed_dim] sequences");
  const int64_t batch = sizes.size(0);
  at::Tensor lengths = sizes.select(1, 0).contiguous();
  const int64_t width = batch > 0 ? sizes[0][1].item<int64_t>() : 0;
  TORCH_CHECK(batch == 0 || sizes.select(1, 1).eq(width).all().item<bool>(),
              "vkml: the transformer fast path takes nested sequences of one embed_dim");
  const int64_t max_len = batch > 0 ? lengths.max().item<int64_t>() : 0;
  at::Tensor buffer = impl->get_buffer();
  at::Tensor valid = positions_within(lengths, max_len, buffer.options());
  at::Tensor dense = at::zeros({batch, max_len, width}, buffer.options());
  dense.masked_scatter_(valid.unsqueeze(-1), buffer);
  return {dense, sizes, valid};
}

// The rows of `dense` inside the sequences, as a nested tensor of `nested_sizes`.
at::Tensor nest(const at::Tensor& dense, const at::Tensor& valid, const at::Tensor& nested_sizes) {
  at::Tensor buffer = dense.masked_select(valid.unsqueeze(-1));
  return at::detail::make_tensor<at::native::NestedTensorImpl>(buffer, nested_sizes.clone());
}

std::tuple<at::Tensor, at::Tensor> dense_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim,
    int64_t num_head, const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
    const at::Tensor& proj_weight, const at::Tensor& proj_bias,
    const std::optional<at::Tensor>& mask, bool need_weights, bool average_attn_weights,
    std::optional<int64_t> mask_type) {
  const int64_t D = embed_dim;
  TORCH_CHECK(query.dim() == 3, "expected 3-D `query`, got ", query.dim(), "-D tensor");
  TORCH_CHECK(query.size(2) == D, "passed-in embed_dim ", D, " didn't match last dim of query ",
              query.size(2));
  TORCH_CHECK(key.dim() == 3, "expected 3-D `key`, got ", key.dim(), "-D tensor");
  TORCH_CHECK(value.dim() == 3, "expected 3-D `value`, got ", value.dim(), "-D tensor");
  TORCH_CHECK(query.sizes() == key.sizes() && key.sizes() == value.sizes(),
              "expected `query`/`key`/`value` shapes to match");
  TORCH_CHECK(qkv_weight.dim() == 2, "expected 2-D `qkv_weight`, got ", qkv_weight.dim(),
              "-D tensor");
  TORCH_CHECK(D * 3 == qkv_weight.size(0), "expected `qkv_weight` first dim to be 3x embed_dim");
  TORCH_CHECK(D == qkv_weight.size(1), "expected `qkv_weight` second dim to be embed_Dim");
  TORCH_CHECK(qkv_bias.dim() == 1, "expected 1-D `qkv_bias`, got ", qkv_bias.dim(), "-D tensor");
  TORCH_CHECK(qkv_bias.size(0) == 3 * D,
              "expected `qkv_bias` first dim and first dim of query to be equal");
  TORCH_CHECK(D % num_head == 0, "`embed_dim` must divide evenly by `num_heads`");
  if (query.numel() == 0) return {at::empty_like(query), at::Tensor()};

  at::Tensor q, k, v;
  if (query.is_same(key) && key.is_same(value)) {  // self-attention: one projection
    auto qkv = at::linear(query, qkv_weight, qkv_bias).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    auto w = qkv_weight.chunk(3, 0);
    auto b = qkv_bias.chunk(3, 0);
    q = at::linear(query, w[0], b[0]);
    k = at::linear(key, w[1], b[1]);
    v = at::linear(value, w[2], b[2]);
  }
  q = split_heads(q, num_head);
  k = split_heads(k, num_head);
  v = split_heads(v, num_head);
  const int64_t B = query.size(0), L = query.size(1);
  const std::vector<int64_t> scores_shape{B, num_head, L, key.size(1)};
  std::optional<at::Tensor> masked_out;
  if (mask.has_value() && mask->defined()) masked_out = score_mask(*mask, mask_type, scores_shape);

  at::Tensor context, weights;
  if (!need_weights) {
    // The fused kernel; its boolean mask says where to attend.
    std::optional<at::Tensor> attend;
    if (masked_out) attend = masked_out->logical_not();
    context = at::scaled_dot_product_attention(q, k, v, attend);
  } else {
    const double scale = 1.0 / std::sqrt(double(D / num_head));
    at::Tensor scores = at::matmul(q * scale, k.transpose(-2, -1));
    if (masked_out) scores.masked_fill_(*masked_out, -std::numeric_limits<double>::infinity());
    weights = at::softmax(scores, -1);
    context = at::matmul(weights, v);
    if (average_attn_weights) weights = weights.sum(1).div_(num_head);
  }
  at::Tensor out = at::linear(context.transpose(1, 2).reshape({B, L, D}), proj_weight, proj_bias);
  return {out, weights};
}

std::tuple<at::Tensor, at::Tensor> native_multi_head_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim,
    int64_t num_head, const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
    const at::Tensor& proj_weight, const at::Tensor& proj_bias,
    const std::optional<at::Tensor>& mask, bool need_weights, bool average_attn_weights,
    std::optional<int64_t> mask_type) {
  if (!query.is_nested()) {
    return dense_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                           proj_weight, proj_bias, mask, need_weights, average_attn_weights,
                           mask_type);
  }
  // Nested self-attention: padded, its padding masked out of the keys.
  TORCH_CHECK(!mask.has_value() || !mask->defined(), "NestedTensor with mask is not supported yet");
  TORCH_CHECK(query.is_same(key) && key.is_same(value),
              "vkml: nested multi-head attention takes one tensor as query, key and value");
  Padded p = pad_nested(query);
  auto [out, weights] = dense_attention(p.dense, p.dense, p.dense, embed_dim, num_head, qkv_weight,
                                        qkv_bias, proj_weight, proj_bias, p.valid.logical_not(),
                                        need_weights, average_attn_weights,
                                        /*mask_type=*/1);
  return {nest(out, p.valid, p.nested_sizes), weights};
}

at::Tensor transformer_encoder_layer(const at::Tensor& src, int64_t embed_dim, int64_t num_heads,
                                     const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
                                     const at::Tensor& proj_weight, const at::Tensor& proj_bias,
                                     bool use_gelu, bool norm_first, double eps,
                                     const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
                                     const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2,
                                     const at::Tensor& ffn_weight_1, const at::Tensor& ffn_bias_1,
                                     const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
                                     const std::optional<at::Tensor>& mask,
                                     std::optional<int64_t> mask_type) {
  if (src.is_nested()) {
    TORCH_CHECK(!mask.has_value() || !mask->defined(),
                "NestedTensor with mask is not supported yet");
    Padded p = pad_nested(src);
    at::Tensor out = transformer_encoder_layer(
        p.dense, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
        norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
        ffn_bias_1, ffn_weight_2, ffn_bias_2, p.valid.logical_not(), /*mask_type=*/1);
    return nest(out, p.valid, p.nested_sizes);
  }
  if (src.numel() == 0) return src.clone();
  auto norm = [&](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    return at::layer_norm(x, {embed_dim}, w, b, eps);
  };
  // Attention block, then the feed-forward block, each with its residual; the norms
  // before each block (norm_first) or after each residual sum.
  at::Tensor x = norm_first ? norm(src, norm_weight_1, norm_bias_1) : src;
  x = std::get<0>(dense_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                  proj_bias, mask, /*need_weights=*/false,
                                  /*average_attn_weights=*/true, mask_type));
  x.add_(src);
  if (!norm_first) x = norm(x, norm_weight_1, norm_bias_1);
  at::Tensor y = norm_first ? norm(x, norm_weight_2, norm_bias_2) : x;
  y = at::linear(y, ffn_weight_1, ffn_bias_1);
  y = use_gelu ? at::gelu(y) : at::relu(y);
  y = at::linear(y, ffn_weight_2, ffn_bias_2);
  x = x.add(y);
  if (!norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  return x;
}

// Whether every row of `mask` ([B, L] bool) is a run of trues from its start.
bool nested_tensor_from_mask_left_aligned(const at::Tensor& t, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Expected mask to be of type Bool, but got ",
              mask.scalar_type(), " instead.");
  TORCH_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  at::Tensor lengths = mask.sum(1, /*keepdim=*/true);
  at::Tensor steps = at::arange(mask.size(1), lengths.options()).unsqueeze(0);
  return at::equal(mask, steps.lt(lengths));
}

// [B, L, E] with a left-aligned [B, L] mask of valid positions -> nested [length, E] rows.
at::Tensor nested_tensor_from_mask(const at::Tensor& t, const at::Tensor& mask, bool mask_check) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Expected mask to be of type Bool, but got ",
              mask.scalar_type(), " instead.");
  TORCH_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  TORCH_CHECK(t.dim() == 3, "Input should be a 3D tensor, N * L * D");
  TORCH_CHECK(mask.size(0) == t.size(0) && mask.size(1) == t.size(1),
              "Mask size should match input size");
  if (mask_check) {
    TORCH_CHECK(nested_tensor_from_mask_left_aligned(t, mask),
                "Mask must be left-aligned: each row of the padding mask must be a run of trues "
                "from its start");
  }
  at::Tensor lengths = mask.sum(1).to(at::kCPU).to(at::kLong);
  at::Tensor sizes = at::stack({lengths, at::full_like(lengths, t.size(2))}, 1);
  return at::detail::make_tensor<at::native::NestedTensorImpl>(t.masked_select(mask.unsqueeze(-1)),
                                                               sizes);
}

// Whether nt is the transformer's kind of nested tensor: contiguous [length, E] rows of one
// E, which pad_nested pads in one masked_scatter.
bool rows_of_one_width(const at::Tensor& nt) {
  const auto* impl = at::native::get_nested_tensor_impl(nt);
  const at::Tensor& sizes = impl->get_nested_sizes();
  return at::native::nested_tensor_impl_is_contiguous(impl) && sizes.dim() == 2 &&
         sizes.size(1) == 2 && sizes.size(0) > 0 &&
         sizes.select(1, 1).eq(sizes[0][1]).all().item<bool>();
}

at::Tensor to_padded_tensor(const at::Tensor& nt, double padding,
                            at::OptionalIntArrayRef output_size) {
  // Any other shape, or a given output size: ATen's kernel, which pads each component with
  // at::pad and stacks them (device-generic, though PyTorch registers it for the CPU alone).
  if (!rows_of_one_width(nt) || output_size.has_value()) {
    return at::native::NestedTensor_to_padded_tensor_generic(nt, padding, output_size);
  }
  Padded p = pad_nested(nt);
  at::Tensor dense = p.dense;
  if (padding != 0.0) dense.masked_fill_(p.valid.logical_not().unsqueeze(-1), padding);
  return dense;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_native_multi_head_attention", TORCH_FN(native_multi_head_attention));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(transformer_encoder_layer));
  m.impl("_nested_tensor_from_mask", TORCH_FN(nested_tensor_from_mask));
  m.impl("_nested_tensor_from_mask_left_aligned", TORCH_FN(nested_tensor_from_mask_left_aligned));
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_native_multi_head_attention", TORCH_FN(native_multi_head_attention));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(transformer_encoder_layer));
  m.impl("to_padded_tensor", TORCH_FN(to_padded_tensor));
}

}  // namespace vkml_aten
