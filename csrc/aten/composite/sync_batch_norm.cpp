// The per-rank pieces of nn.SyncBatchNorm (batch_norm_stats, batch_norm_gather_stats[_with_counts],
// batch_norm_elemt, batch_norm_backward_reduce / _elemt) as compositions of native vkml
// reductions and elementwise ops. PyTorch has these only for CUDA (the CPU has none, so the
// fallback cannot run them either). Statistics are kept in float32 for 16-bit inputs, as CUDA
// keeps them; nothing is read back to the host (counts stay on the device).
#include <torch/library.h>

#include <vector>

#include "aten/vkml_tensor.h"

namespace vkml_aten {
namespace {

at::ScalarType stats_type(const at::Tensor& input) {
  at::ScalarType t = input.scalar_type();
  return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t;
}

// Every dim but the channel dim (1): what the statistics reduce over.
std::vector<int64_t> reduce_dims(const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "SyncBatchNorm: expected at least 2-d input, got ", input.dim(),
              "-d");
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel vector shaped to broadcast against input ([1, C, 1, ...]).
at::Tensor per_channel(const at::Tensor& v, const at::Tensor& input, at::ScalarType type) {
  std::vector<int64_t> shape(size_t(input.dim()), 1);
  shape[1] = input.size(1);
  return v.to(type).reshape(shape);
}

std::tuple<at::Tensor, at::Tensor> stats(const at::Tensor& input, double eps) {
  const at::ScalarType type = stats_type(input);
  const auto dims = reduce_dims(input);
  at::Tensor x = input.to(type);
  at::Tensor mean = x.mean(dims);
  at::Tensor var = (x - per_channel(mean, input, type)).square().mean(dims);
  return {mean, (var + eps).rsqrt()};
}

// Joins the ranks' statistics ([world, C] each, `counts` elements per rank) into the global
// mean and inverse std, and updates the running statistics with the unbiased variance.
std::tuple<at::Tensor, at::Tensor> gather_stats_with_counts(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    double momentum, double eps, const at::Tensor& counts) {
  (void)input;
  TORCH_CHECK(mean.dim() == 2 && invstd.sizes() == mean.sizes(),
              "batch_norm_gather_stats: expected mean and invstd of shape [world, C], got ",
              mean.sizes(), " and ", invstd.sizes());
  const at::ScalarType type = mean.scalar_type();
  at::Tensor n = counts.to(type).reshape({-1, 1});
  TORCH_CHECK(n.size(0) == mean.size(0), "batch_norm_gather_stats: ", counts.numel(),
              " counts for ", mean.size(0), " ranks");
  at::Tensor total = n.sum(0);
  // A rank with no samples has no statistics (they may be anything): weigh it out.
  at::Tensor has = n > 0;
  at::Tensor m = at::where(has, mean, 0);
  at::Tensor var = at::where(has, invstd.reciprocal().square() - eps, 0);
  at::Tensor global_mean = (n * m).sum(0) / total;
  at::Tensor global_var = (n * (var + (m - global_mean).square())).sum(0) / total;
  if (running_mean && running_mean->defined())
    running_mean->copy_(running_mean->to(type) * (1 - momentum) + global_mean * momentum);
  if (running_var && running_var->defined()) {
    at::Tensor unbiased = global_var * total / (total - 1);
    running_var->copy_(running_var->to(type) * (1 - momentum) + unbiased * momentum);
  }
  return {global_mean, (global_var + eps).rsqrt()};
}

std::tuple<at::Tensor, at::Tensor> gather_stats(const at::Tensor& input, const at::Tensor& mean,
                                                const at::Tensor& invstd,
                                                const std::optional<at::Tensor>& running_mean,
                                                const std::optional<at::Tensor>& running_var,
                                                double momentum, double eps, int64_t count) {
  at::Tensor counts = at::full({mean.size(0)}, double(count), mean.options());
  return gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps,
                                  counts);
}

at::Tensor elemt(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                 const std::optional<at::Tensor>& bias, const at::Tensor& mean,
                 const at::Tensor& invstd, double eps) {
  (void)eps;
  const at::ScalarType type = stats_type(input);
  at::Tensor y =
      (input.to(type) - per_channel(mean, input, type)) * per_channel(invstd, input, type);
  if (weight && weight->defined()) y = y * per_channel(*weight, input, type);
  if (bias && bias->defined()) y = y + per_channel(*bias, input, type);
  return y.to(input.scalar_type()).contiguous(input.suggest_memory_format());
}

at::Tensor& elemt_out(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, const at::Tensor& mean,
                      const at::Tensor& invstd, double eps, at::Tensor& out) {
  at::Tensor y = elemt(input, weight, bias, mean, invstd, eps);
  if (out.sizes() != y.sizes()) out.resize_(y.sizes());
  return out.copy_(y);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> backward_reduce(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
    const at::Tensor& invstd, const std::optional<at::Tensor>& weight, bool input_g, bool weight_g,
    bool bias_g) {
  const at::ScalarType type = stats_type(input);
  const auto dims = reduce_dims(input);
  at::Tensor dy = grad_out.to(type);
  at::Tensor sum_dy = dy.sum(dims);
  at::Tensor sum_dy_xmu = (dy * (input.to(type) - per_channel(mean, input, type))).sum(dims);
  const bool has_weight = weight && weight->defined();
  const at::ScalarType weight_type = has_weight ? weight->scalar_type() : type;
  at::Tensor grad_weight, grad_bias;
  if (weight_g) grad_weight = (sum_dy_xmu * invstd.to(type)).to(weight_type);
  if (bias_g) grad_bias = sum_dy.to(weight_type);
  if (!input_g) return {at::Tensor(), at::Tensor(), grad_weight, grad_bias};
  return {sum_dy, sum_dy_xmu, grad_weight, grad_bias};
}

at::Tensor backward_elemt(const at::Tensor& grad_out, const at::Tensor& input,
                          const at::Tensor& mean, const at::Tensor& invstd,
                          const std::optional<at::Tensor>& weight, const at::Tensor& sum_dy,
                          const at::Tensor& sum_dy_xmu, const at::Tensor& count) {
  const at::ScalarType type = stats_type(input);
  at::Tensor total = count.to(type).sum();  // all ranks' samples per channel
  at::Tensor mean_dy = per_channel(sum_dy, input, type) / total;
  at::Tensor mean_dy_xmu = per_channel(sum_dy_xmu, input, type) / total;
  at::Tensor inv = per_channel(invstd, input, type);
  at::Tensor xmu = input.to(type) - per_channel(mean, input, type);
  at::Tensor scale = inv;
  if (weight && weight->defined()) scale = scale * per_channel(*weight, input, type);
  at::Tensor grad = (grad_out.to(type) - mean_dy - xmu * inv.square() * mean_dy_xmu) * scale;
  return grad.to(input.scalar_type()).contiguous(input.suggest_memory_format());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("batch_norm_stats", TORCH_FN(stats));
  m.impl("batch_norm_gather_stats", TORCH_FN(gather_stats));
  m.impl("batch_norm_gather_stats_with_counts", TORCH_FN(gather_stats_with_counts));
  m.impl("batch_norm_elemt", TORCH_FN(elemt));
  m.impl("batch_norm_elemt.out", TORCH_FN(elemt_out));
  m.impl("batch_norm_backward_reduce", TORCH_FN(backward_reduce));
  m.impl("batch_norm_backward_elemt", TORCH_FN(backward_elemt));
}

}  // namespace vkml_aten
