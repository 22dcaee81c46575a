// Batch, layer and group normalisation and their backward passes (instance norm is
// batch norm of a reshaped input in PyTorch's composite). Statistics are computed in
// fp32; saved mean / invstd have the input's dtype, as on the CPU. float64: composed of
// float64 kernels (norm_float64.h).
#include <ATen/native/layer_norm.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include "fallback.h"
#include "norm_float64.h"
#include "op_helpers.h"
#include "vkml/ops/norm.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using Tensor3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using OptTensor = std::optional<at::Tensor>;

// float64 norms are composed of float64 kernels where the device has them.
bool float64_arithmetic(const at::Tensor& t) { return vkml_device(t).info().supports_fp64; }

// An optional per-channel parameter as contiguous fp32, or undefined.
at::Tensor f32(const OptTensor& t) {
  return given(t) ? t->to(at::kFloat).contiguous() : at::Tensor();
}
uint64_t addr_or_0(const at::Tensor& t) { return t.defined() ? addr(t) : 0; }

at::Tensor f32_empty(const at::Tensor& like, int64_t n) {
  return at::empty({n}, like.options().dtype(at::kFloat));
}

// ------------------------------------------------------------------ batch norm

vkml::ops::NormView bn_view(const at::Tensor& x) {
  int64_t inner = 1;
  for (int64_t d = 2; d < x.dim(); ++d) inner *= x.size(d);
  return {x.size(0), x.size(1), inner, inner, x.size(1), inner, x.size(1)};
}

// A channels-last input's memory is an [N * H * W, C] matrix whose per-column statistics
// are batch norm's: the kernels run on that view, with no copy, and the results keep the
// input's layout, as on the CPU and CUDA.
bool channels_last(const at::Tensor& t) {
  return channels_last_layout(t) && t.is_contiguous(t.suggest_memory_format());
}
at::Tensor as_rows(const at::Tensor& t) { return t.movedim(1, -1).reshape({-1, t.size(1)}); }
at::Tensor from_rows(const at::Tensor& rows, const at::Tensor& like) {
  return rows.view(like.movedim(1, -1).sizes()).movedim(-1, 1);
}

Tensor3 batch_norm(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                   const OptTensor& running_mean, const OptTensor& running_var, bool training,
                   double momentum, double eps) {
  if (input.scalar_type() == at::kDouble) {  // composed (norm_float64.h), else the CPU's
    if (float64_arithmetic(input)) {
      TORCH_CHECK(training || (given(running_mean) && given(running_var)),
                  "running_mean and running_var must be defined in evaluation mode");
      return norm_f64::batch_norm(input, weight, bias, running_mean, running_var, training,
                                  momentum, eps);
    }
    return cpu_route<at::_ops::native_batch_norm>(input, weight, bias, running_mean, running_var,
                                                  training, momentum, eps);
  }
  check_float_storage("batch_norm", input.scalar_type());
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected at least 2-D input, got ", input.dim(), "-D");
  const bool rows = channels_last(input);
  at::Tensor x = rows ? as_rows(input) : input.contiguous();
  auto v = bn_view(x);
  int64_t C = v.c;
  at::Tensor w = f32(weight), b = f32(bias);
  for (const at::Tensor* t : {&w, &b})
    TORCH_CHECK(!t->defined() || t->numel() == C, "batch_norm: weight and bias must have ", C,
                " elements");
  at::Tensor mean, rstd;
  if (training) {
    mean = f32_empty(x, C);
    rstd = f32_empty(x, C);
    at::Tensor var = given(running_var) ? f32_empty(x, C) : at::Tensor();
    if (x.numel() > 0) {
      guarded([&] {
        vkml::ops::norm_stats(vkml_device(x), to_vkml(x), addr(x), addr(mean), addr(rstd),
                              addr_or_0(var), v, float(eps));
      });
    } else {
      mean.fill_(NAN);
      rstd.fill_(NAN);
      if (var.defined()) var.fill_(NAN);
    }
    at::NoGradGuard no_grad;
    if (given(running_mean))
      running_mean->mul_(1 - momentum).add_(mean.to(running_mean->scalar_type()), momentum);
    if (given(running_var)) {
      int64_t n = v.outer * v.inner;
      at::Tensor unbiased = n > 1 ? var * (double(n) / double(n - 1)) : var;
      running_var->mul_(1 - momentum).add_(unbiased.to(running_var->scalar_type()), momentum);
    }
  } else {
    TORCH_CHECK(given(running_mean) && given(running_var),
                "batch_norm: running_mean and running_var must be defined in evaluation mode");
    mean = running_mean->to(at::kFloat).contiguous();
    rstd = (running_var->to(at::kFloat) + eps).rsqrt();
  }
  at::Tensor y = at::empty(x.sizes(), x.options());
  if (y.numel() > 0)
    guarded([&] {
      vkml::ops::norm_forward(vkml_device(x), to_vkml(x), addr(x), addr_or_0(w), addr_or_0(b),
                              addr(mean), addr(rstd), addr(y), v);
    });
  if (rows) y = from_rows(y, input);
  if (!training) {
    at::Tensor none = at::empty({0}, x.options());
    return {y, none, none.clone()};
  }
  return {y, mean.to(x.scalar_type()), rstd.to(x.scalar_type())};
}

// Per-parameter sums of gy and gy * xhat over the view (n parameters): the
// weight and bias gradients, and batch norm's data-grad terms. Zeros when x
// is empty.
std::pair<at::Tensor, at::Tensor> param_grad_sums(const at::Tensor& x, const at::Tensor& gy,
                                                  const at::Tensor& mean, const at::Tensor& rstd,
                                                  const vkml::ops::NormView& v, int64_t n) {
  at::Tensor sum_g = f32_empty(x, n), sum_gx = f32_empty(x, n);
  if (x.numel() > 0) {
    guarded([&] {
      vkml::ops::norm_backward_sums(vkml_device(x), to_vkml(x), addr(x), addr(gy), 0, addr(mean),
                                    addr(rstd), addr(sum_g), addr(sum_gx), v);
    });
  } else {
    sum_g.zero_();
    sum_gx.zero_();
  }
  return {sum_g, sum_gx};
}

Tensor3 batch_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            const OptTensor& weight, const OptTensor& running_mean,
                            const OptTensor& running_var, const OptTensor& save_mean,
                            const OptTensor& save_invstd, bool train, double eps,
                            std::array<bool, 3> mask) {
  if (input.scalar_type() == at::kDouble) {
    if (float64_arithmetic(input))
      return norm_f64::batch_norm_backward(grad_out, input, weight, running_mean, running_var,
                                           save_mean, save_invstd, train, eps, mask);
    return cpu_route<at::_ops::native_batch_norm_backward>(grad_out, input, weight, running_mean,
                                                           running_var, save_mean, save_invstd,
                                                           train, eps, mask);
  }
  check_float_storage("batch_norm_backward", input.scalar_type());
  const bool rows = channels_last(input);
  at::Tensor x = rows ? as_rows(input) : input.contiguous();
  at::Tensor gy = grad_out.to(x.scalar_type());
  gy = rows ? as_rows(gy.contiguous(input.suggest_memory_format())) : gy.contiguous();
  auto v = bn_view(x);
  int64_t C = v.c;
  at::Tensor mean, rstd;
  if (train) {
    TORCH_CHECK(given(save_mean) && given(save_invstd),
                "batch_norm_backward: saved statistics "
                "are required in training mode");
    mean = save_mean->to(at::kFloat).contiguous();
    rstd = save_invstd->to(at::kFloat).contiguous();
  } else {
    TORCH_CHECK(given(running_mean) && given(running_var),
                "batch_norm_backward: running statistics are required in evaluation mode");
    mean = running_mean->to(at::kFloat).contiguous();
    rstd = (running_var->to(at::kFloat) + eps).rsqrt();
  }
  at::Tensor w = f32(weight);
  at::ScalarType param_type = given(weight) ? weight->scalar_type() : x.scalar_type();
  at::Tensor sum_g, sum_gx;  // per channel: sum(gy), sum(gy * xhat)
  if (mask[1] || mask[2] || (mask[0] && train)) {
    std::tie(sum_g, sum_gx) = param_grad_sums(x, gy, mean, rstd, v, C);
  }
  at::Tensor gi, gw, gb;
  if (mask[0]) {
    gi = at::empty(x.sizes(), x.options());
    at::Tensor sa, sb;
    if (train) {  // batch norm's weight is per channel: sum(gy * w) = w * sum(gy)
      sa = w.defined() ? sum_g * w : sum_g;
      sb = w.defined() ? sum_gx * w : sum_gx;
    }
    if (gi.numel() > 0)
      guarded([&] {
        vkml::ops::norm_data_grad(vkml_device(x), to_vkml(x), addr(x), addr(gy), addr_or_0(w),
                                  addr(mean), addr(rstd), addr_or_0(sa), addr_or_0(sb), addr(gi), v,
                                  v.outer * v.inner);
      });
    if (rows) gi = from_rows(gi, input);
  }
  if (mask[1]) gw = sum_gx.to(param_type);
  if (mask[2]) gb = sum_g.to(param_type);
  return {gi, gw, gb};
}

Tensor3 bn_legit(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                 at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum,
                 double eps) {
  return batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

Tensor3 bn_legit_no_stats(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                          bool training, double momentum, double eps) {
  return batch_norm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

Tensor3 bn_legit_no_training(const at::Tensor& input, const OptTensor& weight,
                             const OptTensor& bias, const at::Tensor& running_mean,
                             const at::Tensor& running_var, double momentum, double eps) {
  return batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> bn_with_update(
    const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  auto [y, m, r] = batch_norm(input, weight, bias, running_mean, running_var, true, momentum, eps);
  return {y, m, r, at::empty({0}, input.options().dtype(at::kByte))};
}

Tensor3 bn_backward_new(const at::Tensor& grad_out, const at::Tensor& input,
                        const at::Tensor& weight, const OptTensor& running_mean,
                        const OptTensor& running_var, const OptTensor& save_mean,
                        const OptTensor& save_var, bool update, double eps,
                        std::array<bool, 3> mask, const at::Tensor& /*reserve*/) {
  return batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                             save_var, update, eps, mask);
}

// ------------------------------------------------------------------ layer norm

Tensor3 layer_norm(const at::Tensor& input, at::IntArrayRef normalized_shape,
                   const OptTensor& weight, const OptTensor& bias, double eps) {
  int64_t nd = int64_t(normalized_shape.size()), axis = input.dim() - nd;
  TORCH_CHECK(nd >= 1, "Expected normalized_shape to be at least 1-dimensional");
  TORCH_CHECK(axis >= 0 && input.sizes().slice(axis).equals(normalized_shape),
              "Given normalized_shape=", normalized_shape, ", expected input with shape [*, ",
              normalized_shape, "], but got input of size", input.sizes());
  if (input.scalar_type() == at::kDouble) {
    if (float64_arithmetic(input))
      return norm_f64::layer_norm(input, normalized_shape, weight, bias, eps);
    return cpu_route<at::_ops::native_layer_norm>(input, normalized_shape, weight, bias, eps);
  }
  check_float_storage("layer_norm", input.scalar_type());
  at::Tensor x = input.contiguous();
  int64_t M = 1, K = 1;
  for (int64_t d = 0; d < axis; ++d) M *= x.size(d);
  for (int64_t d = axis; d < x.dim(); ++d) K *= x.size(d);
  at::Tensor w = f32(weight), b = f32(bias);
  for (const at::Tensor* t : {&w, &b})
    TORCH_CHECK(!t->defined() || t->numel() == K, "layer_norm: weight and bias must have the ",
                "normalized shape");
  std::vector<int64_t> stat_shape(x.sizes().begin(), x.sizes().begin() + axis);
  stat_shape.resize(x.dim(), 1);
  at::Tensor mean = f32_empty(x, M), rstd = f32_empty(x, M);
  at::Tensor y = at::empty(x.sizes(), x.options());
  vkml::ops::NormView v{1, M, K, K, M, 1, K};
  if (M > 0 && K > 0) {
    guarded([&] {
      vkml::ops::norm_rows_forward(vkml_device(x), to_vkml(x), addr(x), addr_or_0(w), addr_or_0(b),
                                   addr(mean), addr(rstd), addr(y), v, float(eps));
    });
  } else if (M > 0) {
    mean.fill_(NAN);
    rstd.fill_(NAN);
  }
  return {y, mean.to(x.scalar_type()).view(stat_shape), rstd.to(x.scalar_type()).view(stat_shape)};
}

// grad_input of layer / group norm: per-group sums of gy*w and gy*w*x̂ over the
// view, then the data grad from them (rows = groups, k = elements per group).
at::Tensor norm_input_grad(const at::Tensor& x, const at::Tensor& gy, const at::Tensor& w,
                           const at::Tensor& mean, const at::Tensor& rstd, vkml::ops::NormView v,
                           int64_t rows, int64_t k, bool any) {
  at::Tensor gi = at::empty(x.sizes(), x.options());
  if (!any) return gi;
  TORCH_INTERNAL_ASSERT(v.inner == k && v.c == rows);
  guarded([&] {
    vkml::ops::norm_rows_data_grad(vkml_device(x), to_vkml(x), addr(x), addr(gy), addr_or_0(w),
                                   addr(mean), addr(rstd), addr(gi), v);
  });
  return gi;
}

Tensor3 layer_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            at::IntArrayRef normalized_shape, const at::Tensor& mean_in,
                            const at::Tensor& rstd_in, const OptTensor& weight,
                            const OptTensor& bias, std::array<bool, 3> mask) {
  if (input.scalar_type() == at::kDouble) {
    if (float64_arithmetic(input))
      return norm_f64::layer_norm_backward(grad_out, input, normalized_shape, mean_in, rstd_in,
                                           weight, mask);
    return cpu_route<at::_ops::native_layer_norm_backward>(grad_out, input, normalized_shape,
                                                           mean_in, rstd_in, weight, bias, mask);
  }
  check_float_storage("layer_norm_backward", input.scalar_type());
  int64_t axis = input.dim() - int64_t(normalized_shape.size());
  at::Tensor x = input.contiguous(), gy = grad_out.to(x.scalar_type()).contiguous();
  int64_t M = 1, K = 1;
  for (int64_t d = 0; d < axis; ++d) M *= x.size(d);
  for (int64_t d = axis; d < x.dim(); ++d) K *= x.size(d);
  at::Tensor mean = mean_in.to(at::kFloat).contiguous(), rstd = rstd_in.to(at::kFloat).contiguous();
  at::Tensor w = f32(weight);
  at::ScalarType param_type = given(weight) ? weight->scalar_type() : x.scalar_type();
  at::Tensor gi, gw, gb;
  bool any = M > 0 && K > 0;
  if (mask[0]) gi = norm_input_grad(x, gy, w, mean, rstd, {1, M, K, K, M, 1, K}, M, K, any);
  if (mask[1] || mask[2]) {
    // Per column, sums over the M rows: one workgroup per column where there are enough
    // rows to keep one busy; fewer rows (LayerNorm([C, H, W]) over a small batch: K
    // workgroups of one or two elements each, 20 s for K = 6M on lavapipe) as an
    // elementwise pass and two column sums.
    at::Tensor sg, sgx;
    if (M < 64 && any) {
      at::Tensor g2 = gy.view({M, K}).to(at::kFloat);
      at::Tensor xhat = (x.view({M, K}).to(at::kFloat) - mean.view({M, 1})) * rstd.view({M, 1});
      sgx = (g2 * xhat).sum(0);
      sg = g2.sum(0);
    } else {
      std::tie(sg, sgx) = param_grad_sums(x, gy, mean, rstd, {M, K, 1, K, M, 1, K}, K);
    }
    if (mask[1]) gw = sgx.to(param_type).view(normalized_shape);
    if (mask[2]) gb = sg.to(given(bias) ? bias->scalar_type() : param_type).view(normalized_shape);
  }
  return {gi, gw, gb};
}

// ------------------------------------------------------------------ group norm

Tensor3 group_norm(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                   int64_t N, int64_t C, int64_t HxW, int64_t group, double eps) {
  TORCH_CHECK(group > 0 && C % group == 0, "Expected number of channels in input to be ",
              "divisible by num_groups, but got input of shape ", input.sizes(),
              " and num_groups=", group);
  TORCH_CHECK(input.numel() == N * C * HxW, "group_norm: input has the wrong number of elements");
  if (input.scalar_type() == at::kDouble) {
    if (float64_arithmetic(input)) {
      auto [y, mean, rstd] = norm_f64::group_norm(input, weight, bias, N, C, HxW, group, eps);
      return {in_layout_of(y, input), mean, rstd};
    }
    return cpu_route<at::_ops::native_group_norm>(input, weight, bias, N, C, HxW, group, eps);
  }
  check_float_storage("group_norm", input.scalar_type());
  at::Tensor x = input.contiguous();
  at::Tensor w = f32(weight), b = f32(bias);
  for (const at::Tensor* t : {&w, &b})
    TORCH_CHECK(!t->defined() || t->numel() == C, "group_norm: weight and bias must have ", C,
                " elements");
  int64_t D = C / group * HxW;
  at::Tensor mean = f32_empty(x, N * group), rstd = f32_empty(x, N * group);
  at::Tensor y = at::empty(x.sizes(), x.options());
  vkml::ops::NormView v{1, N * group, D, D, N * group, HxW, C};
  if (x.numel() > 0) {
    guarded([&] {
      vkml::ops::norm_rows_forward(vkml_device(x), to_vkml(x), addr(x), addr_or_0(w), addr_or_0(b),
                                   addr(mean), addr(rstd), addr(y), v, float(eps));
    });
  } else if (N * group > 0) {
    mean.fill_(NAN);
    rstd.fill_(NAN);
  }
  return {in_layout_of(y, input), mean.to(x.scalar_type()).view({N, group}),
          rstd.to(x.scalar_type()).view({N, group})};
}

Tensor3 group_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            const at::Tensor& mean_in, const at::Tensor& rstd_in,
                            const OptTensor& weight, int64_t N, int64_t C, int64_t HxW,
                            int64_t group, std::array<bool, 3> mask) {
  if (input.scalar_type() == at::kDouble) {
    if (float64_arithmetic(input))
      return norm_f64::group_norm_backward(grad_out, input, mean_in, rstd_in, weight, N, C, HxW,
                                           group, mask);
    return cpu_route<at::_ops::native_group_norm_backward>(grad_out, input, mean_in, rstd_in,
                                                           weight, N, C, HxW, group, mask);
  }
  check_float_storage("group_norm_backward", input.scalar_type());
  at::Tensor x = input.contiguous(), gy = grad_out.to(x.scalar_type()).contiguous();
  at::Tensor mean = mean_in.to(at::kFloat).contiguous(), rstd = rstd_in.to(at::kFloat).contiguous();
  at::Tensor w = f32(weight);
  at::ScalarType param_type = given(weight) ? weight->scalar_type() : x.scalar_type();
  int64_t D = C / group * HxW;
  bool any = x.numel() > 0;
  at::Tensor gi, gw, gb;
  if (mask[0]) {
    gi = norm_input_grad(x, gy, w, mean, rstd, {1, N * group, D, D, N * group, HxW, C}, N * group,
                         D, any);
  }
  if (mask[1] || mask[2]) {
    auto [sg, sgx] = param_grad_sums(x, gy, mean, rstd, {N, C, HxW, D, N * group, HxW, C}, C);
    if (mask[1]) gw = sgx.to(param_type);
    if (mask[2]) gb = sg.to(param_type);
  }
  if (gi.defined()) gi = in_layout_of(gi, input);  // as the CPU's
  return {gi, gw, gb};
}

// ATen's LayerNormKernel / LayerNormBackwardKernel dispatch stubs, which ATen's own
// kernels call by device type instead of through the dispatcher (the nested tensors'
// layer_norm and its backward): X as M rows of N, mean and rstd of M.
void layer_norm_stub(const at::Tensor& X, const at::Tensor& gamma, const at::Tensor& beta,
                     int64_t M, int64_t N, double eps, at::Tensor* Y, at::Tensor* mean,
                     at::Tensor* rstd) {
  const int64_t n[] = {N};
  auto [y, m, r] = vkml_aten::layer_norm(X.reshape({M, N}), n,
                                         gamma.defined() ? gamma.reshape({N}) : OptTensor(),
                                         beta.defined() ? beta.reshape({N}) : OptTensor(), eps);
  Y->copy_(y.view(Y->sizes()));
  mean->copy_(m.view(mean->sizes()));
  rstd->copy_(r.view(rstd->sizes()));
}

void layer_norm_backward_stub(const at::Tensor& dY, const at::Tensor& X, const at::Tensor& mean,
                              const at::Tensor& rstd, const at::Tensor& gamma, int64_t M, int64_t N,
                              at::Tensor* dX, at::Tensor* dgamma, at::Tensor* dbeta) {
  const std::array<bool, 3> mask = {dX->defined(), dgamma->defined(), dbeta->defined()};
  const OptTensor weight = gamma.defined() ? gamma.reshape({N}) : OptTensor();
  const int64_t n[] = {N};
  auto [gx, gw, gb] =
      vkml_aten::layer_norm_backward(dY.reshape({M, N}), X.reshape({M, N}), n, mean.reshape({M, 1}),
                                     rstd.reshape({M, 1}), weight, OptTensor(), mask);
  if (mask[0]) dX->copy_(gx.view(dX->sizes()));
  if (mask[1]) dgamma->copy_(gw.view(dgamma->sizes()));
  if (mask[2]) dbeta->copy_(gb.view(dbeta->sizes()));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm", TORCH_FN(batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(batch_norm_backward));
  m.impl("_native_batch_norm_legit", TORCH_FN(bn_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(bn_legit_no_stats));
  m.impl("_native_batch_norm_legit_no_training", TORCH_FN(bn_legit_no_training));
  m.impl("_batch_norm_with_update", TORCH_FN(bn_with_update));
  m.impl("batch_norm_backward", TORCH_FN(bn_backward_new));
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
  m.impl("native_group_norm", TORCH_FN(group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(group_norm_backward));
}

}  // namespace vkml_aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(LayerNormKernel, &vkml_aten::layer_norm_stub)
REGISTER_PRIVATEUSE1_DISPATCH(LayerNormBackwardKernel, &vkml_aten::layer_norm_backward_stub)
}  // namespace at::native
