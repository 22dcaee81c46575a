#include "norm_float64.h"

#include <vector>

#include "op_helpers.h"

namespace vkml_aten::norm_f64 {
namespace {

// x̂'s gradient through the normalization, from the gradient g of x̂ (the output's
// times the weight): rstd (g - mean(g) - x̂ mean(g x̂)), the means over `dims`.
at::Tensor normalized_grad(const at::Tensor& g, const at::Tensor& xhat, const at::Tensor& rstd,
                           at::IntArrayRef dims) {
  return rstd * (g - g.mean(dims, true) - xhat * (g * xhat).mean(dims, true));
}

// Every dim of an N-d batch-norm input but the channel's.
std::vector<int64_t> all_but_channels(const at::Tensor& x) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel vector shaped to broadcast against x ([1, C, 1, ...]).
at::Tensor per_channel(const at::Tensor& v, const at::Tensor& x) {
  std::vector<int64_t> shape(x.dim(), 1);
  shape[1] = x.size(1);
  return v.to(x.scalar_type()).view(shape);
}

}  // namespace

Tensor3 batch_norm(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                   const OptTensor& running_mean, const OptTensor& running_var, bool training,
                   double momentum, double eps) {
  const std::vector<int64_t> dims = all_but_channels(input);
  at::Tensor mean, invstd;
  if (training) {
    mean = input.mean(dims);
    at::Tensor var = (input - per_channel(mean, input)).square().mean(dims);
    invstd = (var + eps).rsqrt();
    const int64_t n = input.numel() / input.size(1);
    if (given(running_mean))
      running_mean->mul_(1 - momentum).add_(mean.to(running_mean->scalar_type()), momentum);
    if (given(running_var)) {
      at::Tensor unbiased = var * (double(n) / double(std::max<int64_t>(n - 1, 1)));
      running_var->mul_(1 - momentum).add_(unbiased.to(running_var->scalar_type()), momentum);
    }
  } else {
    mean = running_mean->to(input.scalar_type());
    invstd = (running_var->to(input.scalar_type()) + eps).rsqrt();
  }
  at::Tensor y = (input - per_channel(mean, input)) * per_channel(invstd, input);
  if (given(weight)) y = y * per_channel(*weight, input);
  if (given(bias)) y = y + per_channel(*bias, input);
  if (!training) return {y, at::empty({0}, input.options()), at::empty({0}, input.options())};
  return {y, mean, invstd};
}

Tensor3 batch_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            const OptTensor& weight, const OptTensor& running_mean,
                            const OptTensor& running_var, const OptTensor& save_mean,
                            const OptTensor& save_invstd, bool train, double eps,
                            std::array<bool, 3> mask) {
  const std::vector<int64_t> dims = all_but_channels(input);
  at::Tensor mean = train ? *save_mean : running_mean->to(input.scalar_type());
  at::Tensor invstd = train ? *save_invstd : (running_var->to(input.scalar_type()) + eps).rsqrt();
  at::Tensor gy = grad_out.to(input.scalar_type());
  at::Tensor xhat = (input - per_channel(mean, input)) * per_channel(invstd, input);
  at::Tensor gi, gw, gb;
  if (mask[0]) {
    at::Tensor g = given(weight) ? gy * per_channel(*weight, input) : gy;
    gi = train ? normalized_grad(g, xhat, per_channel(invstd, input), dims)
               : g * per_channel(invstd, input);
  }
  if (mask[1])
    gw = (gy * xhat).sum(dims).to(given(weight) ? weight->scalar_type() : gy.scalar_type());
  if (mask[2]) gb = gy.sum(dims).to(given(weight) ? weight->scalar_type() : gy.scalar_type());
  return {gi, gw, gb};
}

Tensor3 layer_norm(const at::Tensor& input, at::IntArrayRef normalized_shape,
                   const OptTensor& weight, const OptTensor& bias, double eps) {
  const int64_t axis = input.dim() - int64_t(normalized_shape.size());
  const int64_t K = c10::multiply_integers(normalized_shape);
  at::Tensor x = input.contiguous().view({-1, K});
  at::Tensor mean = x.mean(1, true);
  at::Tensor rstd = ((x - mean).square().mean(1, true) + eps).rsqrt();
  at::Tensor y = (x - mean) * rstd;
  if (given(weight)) y = y * weight->reshape({1, K});
  if (given(bias)) y = y + bias->reshape({1, K});
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().begin() + axis);
  stat_shape.resize(input.dim(), 1);
  return {y.view(input.sizes()), mean.view(stat_shape), rstd.view(stat_shape)};
}

Tensor3 layer_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            at::IntArrayRef normalized_shape, const at::Tensor& mean,
                            const at::Tensor& rstd, const OptTensor& weight,
                            std::array<bool, 3> mask) {
  const int64_t K = c10::multiply_integers(normalized_shape);
  at::Tensor x = input.contiguous().view({-1, K});
  at::Tensor gy = grad_out.to(input.scalar_type()).contiguous().view({-1, K});
  at::Tensor r = rstd.reshape({-1, 1});
  at::Tensor xhat = (x - mean.reshape({-1, 1})) * r;
  at::Tensor gi, gw, gb;
  if (mask[0]) {
    at::Tensor g = given(weight) ? gy * weight->reshape({1, K}) : gy;
    gi = normalized_grad(g, xhat, r, {1}).view(input.sizes());
  }
  const at::ScalarType param = given(weight) ? weight->scalar_type() : input.scalar_type();
  if (mask[1]) gw = (gy * xhat).sum(0).to(param).view(normalized_shape);
  if (mask[2]) gb = gy.sum(0).to(param).view(normalized_shape);
  return {gi, gw, gb};
}

Tensor3 group_norm(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                   int64_t N, int64_t C, int64_t HxW, int64_t group, double eps) {
  at::Tensor x = input.contiguous().view({N, group, -1});
  at::Tensor mean = x.mean(2, true);
  at::Tensor rstd = ((x - mean).square().mean(2, true) + eps).rsqrt();
  at::Tensor y = ((x - mean) * rstd).view({N, C, HxW});
  if (given(weight)) y = y * weight->reshape({1, C, 1});
  if (given(bias)) y = y + bias->reshape({1, C, 1});
  return {y.view(input.sizes()), mean.view({N, group}), rstd.view({N, group})};
}

Tensor3 group_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            const at::Tensor& mean, const at::Tensor& rstd, const OptTensor& weight,
                            int64_t N, int64_t C, int64_t HxW, int64_t group,
                            std::array<bool, 3> mask) {
  at::Tensor x = input.contiguous().view({N, group, -1});
  at::Tensor gy = grad_out.to(input.scalar_type()).contiguous().view({N, C, HxW});
  at::Tensor r = rstd.reshape({N, group, 1});
  at::Tensor xhat = (x - mean.reshape({N, group, 1})) * r;
  at::Tensor gi, gw, gb;
  if (mask[0]) {
    at::Tensor g = given(weight) ? gy * weight->reshape({1, C, 1}) : gy;
    gi = normalized_grad(g.view({N, group, -1}), xhat, r, {2}).view(input.sizes());
  }
  const at::ScalarType param = given(weight) ? weight->scalar_type() : input.scalar_type();
  if (mask[1]) gw = (gy * xhat.view({N, C, HxW})).sum({0, 2}).to(param);
  if (mask[2]) gb = gy.sum({0, 2}).to(param);
  return {gi, gw, gb};
}

}  // namespace vkml_aten::norm_f64
