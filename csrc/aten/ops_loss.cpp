// nll_loss / nll_loss2d forward and backward (cross_entropy = log_softmax +
// nll_loss), binary_cross_entropy, the regression losses (mse, smooth_l1, huber)
// and the margin losses (multi_margin, multilabel_margin).
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "fallback.h"
#include "nll_loss_float64.h"
#include "op_helpers.h"
#include "vkml/ops/loss.h"
#include "vkml/ops/value_check.h"
#include "vkml/shaders/device_error.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// The CPU's checks of nll_loss's arguments.
void check_nll_args(const at::Tensor& self, const at::Tensor& target,
                    const std::optional<at::Tensor>& weight) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  bool no_batch = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch || self.size(0) == target.size(0),
              "size mismatch (got input: ", self.sizes(), ", target: ", target.sizes(), ")");
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
  const int64_t c = self.size(-1);
  TORCH_CHECK(!given(weight) || (weight->dim() == 1 && weight->numel() == c),
              "weight tensor should be defined either for all ", c,
              " classes or no classes but got weight tensor of shape: ", weight->sizes());
  TORCH_CHECK(!given(weight) || weight->scalar_type() == self.scalar_type(),
              "expected scalar type ", self.scalar_type(), " but found ", weight->scalar_type());
}

// float64 log-probabilities: composed of float64 kernels (nll_loss_float64.h) where the
// device has them, else the counted CPU route.
bool nll_composed_f64(const at::Tensor& self) {
  return self.scalar_type() == at::kDouble && vkml_device(self).info().supports_fp64;
}

vkml::ops::NllLossArgs args_for(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight, int64_t reduction,
                                int64_t ignore_index, at::Tensor& input, at::Tensor& tgt,
                                at::Tensor& w) {
  check_nll_args(self, target, weight);
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(self.scalar_type()),
                              "nll_loss on vkml supports float32, float16 and bfloat16, got ",
                              self.scalar_type());
  input = self.contiguous();
  tgt = target.to(at::kLong).contiguous();
  int64_t c = self.size(-1);
  if (weight.has_value() && weight->defined()) w = weight->to(self.scalar_type()).contiguous();
  vkml::ops::NllLossArgs a;
  a.dtype = to_vkml(self.scalar_type());
  a.input = addr(input);
  a.target = addr(tgt);
  a.weight = w.defined() ? addr(w) : 0;
  a.n = self.dim() == 1 ? 1 : self.size(0);
  a.c = c;
  a.ignore_index = ignore_index;
  a.reduction = static_cast<vkml::ops::Reduction>(reduction);
  return a;
}

std::tuple<at::Tensor, at::Tensor> nll_forward(const at::Tensor& self, const at::Tensor& target,
                                               const std::optional<at::Tensor>& weight,
                                               int64_t reduction, int64_t ignore_index) {
  if (nll_composed_f64(self)) {
    check_nll_args(self, target, weight);
    return nll_f64::forward(self, target, weight, reduction, ignore_index);
  }
  if (self.scalar_type() == at::kDouble)  // a device without float64 arithmetic
    return cpu_route<at::_ops::nll_loss_forward>(self, target, weight, reduction, ignore_index);
  if (self.scalar_type() == at::kBFloat16) {  // float32 math, one rounding at the end
    auto w32 = weight.has_value() && weight->defined()
                   ? std::optional<at::Tensor>(weight->to(at::kFloat))
                   : std::nullopt;
    auto [o, t] = nll_forward(self.to(at::kFloat), target, w32, reduction, ignore_index);
    return {o.to(at::kBFloat16), t.to(at::kBFloat16)};
  }
  at::Tensor input, tgt, w;
  auto a = args_for(self, target, weight, reduction, ignore_index, input, tgt, w);
  bool none = reduction == 0 && self.dim() == 2;
  at::Tensor output =
      at::empty(none ? at::IntArrayRef{self.size(0)} : at::IntArrayRef{}, self.options());
  at::Tensor total_weight = at::empty({}, self.options());
  a.output = addr(output);
  a.total_weight = addr(total_weight);
  if (reduction == 0 && self.dim() == 1) a.reduction = vkml::ops::Reduction::Sum;
  if (a.n == 0 && none) return {output, total_weight};
  guarded([&] { vkml::ops::nll_loss_forward(vkml_device(self), a); });
  return {output, total_weight};
}

std::tuple<at::Tensor&, at::Tensor&> nll_forward_out(const at::Tensor& self,
                                                     const at::Tensor& target,
                                                     const std::optional<at::Tensor>& weight,
                                                     int64_t reduction, int64_t ignore_index,
                                                     at::Tensor& output, at::Tensor& total_weight) {
  auto [o, t] = nll_forward(self, target, weight, reduction, ignore_index);
  at::native::resize_output(output, o.sizes());
  output.copy_(o);
  at::native::resize_output(total_weight, t.sizes());
  total_weight.copy_(t);
  return {output, total_weight};
}

at::Tensor nll_backward(const at::Tensor& grad_output, const at::Tensor& self,
                        const at::Tensor& target, const std::optional<at::Tensor>& weight,
                        int64_t reduction, int64_t ignore_index, const at::Tensor& total_weight) {
  if (nll_composed_f64(self)) {
    check_nll_args(self, target, weight);
    return nll_f64::backward(grad_output, self, target, weight, reduction, ignore_index,
                             total_weight);
  }
  if (self.scalar_type() == at::kDouble)
    return cpu_route<at::_ops::nll_loss_backward>(grad_output, self, target, weight, reduction,
                                                  ignore_index, total_weight);
  if (self.scalar_type() == at::kBFloat16) {
    auto w32 = weight.has_value() && weight->defined()
                   ? std::optional<at::Tensor>(weight->to(at::kFloat))
                   : std::nullopt;
    return nll_backward(grad_output.to(at::kFloat), self.to(at::kFloat), target, w32, reduction,
                        ignore_index, total_weight.to(at::kFloat))
        .to(at::kBFloat16);
  }
  at::Tensor input, tgt, w;
  auto a = args_for(self, target, weight, reduction, ignore_index, input, tgt, w);
  if (reduction == 0 && self.dim() == 1) a.reduction = vkml::ops::Reduction::Sum;
  at::Tensor tw = total_weight.to(self.scalar_type()).contiguous();
  a.total_weight = addr(tw);
  at::Tensor go = grad_output.to(self.scalar_type()).contiguous();
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  guarded([&] { vkml::ops::nll_loss_backward(vkml_device(self), a, addr(go), addr(grad_input)); });
  return grad_input;
}

at::Tensor& nll_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight,
                             int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight, at::Tensor& grad_input) {
  at::Tensor r =
      nll_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight);
  at::native::resize_output(grad_input, r.sizes());
  grad_input.copy_(r);
  return grad_input;
}

// ------------------------------------------------------------------ nll_loss2d
// [N, C, H, W] scores with [N, H, W] targets are [N*H*W, C] rows for the nll_loss
// kernel once the class dim is moved last.

void check_2d(const at::Tensor& self, const at::Tensor& target) {
  TORCH_CHECK(target.dim() == 3,
              "only batches of spatial targets supported (3D tensors) but got targets of "
              "dimension: ",
              target.dim());
  TORCH_CHECK(self.dim() == 4,
              "only batches of spatial inputs supported (4D tensors), but got input of "
              "dimension: ",
              self.dim());
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) &&
                  self.size(3) == target.size(2),
              "input and target batch or spatial sizes don't match: target ", target.sizes(),
              ", input ", self.sizes());
}

at::Tensor rows_of(const at::Tensor& self) {
  return self.movedim(1, -1).reshape({-1, self.size(1)});
}

std::tuple<at::Tensor, at::Tensor> nll2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                 const std::optional<at::Tensor>& weight,
                                                 int64_t reduction, int64_t ignore_index) {
  check_2d(self, target);
  auto [out, tw] =
      nll_forward(rows_of(self), target.reshape({-1}), weight, reduction, ignore_index);
  if (reduction == at::Reduction::None) out = out.view(target.sizes());
  return {out, tw};
}

std::tuple<at::Tensor&, at::Tensor&> nll2d_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  auto [o, t] = nll2d_forward(self, target, weight, reduction, ignore_index);
  at::native::resize_output(output, o.sizes());
  output.copy_(o);
  at::native::resize_output(total_weight, t.sizes());
  total_weight.copy_(t);
  return {output, total_weight};
}

at::Tensor nll2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                          const at::Tensor& target, const std::optional<at::Tensor>& weight,
                          int64_t reduction, int64_t ignore_index, const at::Tensor& total_weight) {
  check_2d(self, target);
  at::Tensor go = reduction == at::Reduction::None ? grad_output.reshape({-1}) : grad_output;
  at::Tensor rows = nll_backward(go, rows_of(self), target.reshape({-1}), weight, reduction,
                                 ignore_index, total_weight);
  int64_t n = self.size(0), h = self.size(2), w = self.size(3);
  return rows.view({n, h, w, self.size(1)}).movedim(-1, 1).contiguous();
}

at::Tensor& nll2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                               const at::Tensor& target, const std::optional<at::Tensor>& weight,
                               int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight, at::Tensor& grad_input) {
  at::Tensor r =
      nll2d_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight);
  at::native::resize_output(grad_input, r.sizes());
  grad_input.copy_(r);
  return grad_input;
}

// binary_cross_entropy from native elementwise ops. As in PyTorch, the logs are
// clamped at -100 so that a probability of exactly 0 or 1 gives a finite loss,
// and the backward divides by max(x(1-x), 1e-12).
at::Tensor apply_reduction(const at::Tensor& loss, int64_t reduction) {
  if (reduction == at::Reduction::Mean) return loss.mean();
  if (reduction == at::Reduction::Sum) return loss.sum();
  return loss;
}
at::Tensor vk_bce(const at::Tensor& self, const at::Tensor& target,
                  const std::optional<at::Tensor>& weight, int64_t reduction) {
  TORCH_CHECK(self.sizes() == target.sizes(), "Using a target size (", target.sizes(),
              ") that is different to the input size (", self.sizes(),
              ") is deprecated. "
              "Please ensure they have the same size.");
  at::Tensor log_x = self.log().clamp_min(-100);
  at::Tensor log_1mx = (1 - self).log().clamp_min(-100);
  at::Tensor loss = -(target * log_x + (1 - target) * log_1mx);
  if (weight.has_value() && weight->defined()) loss = loss * *weight;
  return apply_reduction(loss, reduction);
}
at::Tensor& vk_bce_out(const at::Tensor& self, const at::Tensor& target,
                       const std::optional<at::Tensor>& weight, int64_t reduction,
                       at::Tensor& out) {
  at::Tensor r = vk_bce(self, target, weight, reduction);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}
at::Tensor vk_bce_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                           const std::optional<at::Tensor>& weight, int64_t reduction) {
  at::Tensor denom = ((1 - self) * self).clamp_min(1e-12);
  at::Tensor g = grad * (self - target) / denom;
  if (weight.has_value() && weight->defined()) g = g * *weight;
  if (reduction == at::Reduction::Mean && self.numel() > 0) g = g / double(self.numel());
  return g.expand(self.sizes()).contiguous();
}
at::Tensor& vk_bce_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                int64_t reduction, at::Tensor& grad_input) {
  at::Tensor r = vk_bce_backward(grad, self, target, weight, reduction);
  at::native::resize_output(grad_input, r.sizes());
  grad_input.copy_(r);
  return grad_input;
}

// ------------------------------------------------------------ regression losses
// From native elementwise ops, with the CPU kernels' branch conditions (the
// backward's <= / >= decide the gradient at |x - y| == beta, beta == 0 included).

at::Tensor& out_write(at::Tensor& out, const at::Tensor& r) {
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// d(loss)/d(input) scale of each element: the grad_output, / numel for a mean.
at::Tensor grad_scale(const at::Tensor& grad, const at::Tensor& self, int64_t reduction) {
  if (reduction == at::Reduction::Mean && self.numel() > 0) return grad / double(self.numel());
  return grad;
}

at::Tensor vk_mse(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  at::Tensor d = self - target;
  return apply_reduction(d * d, reduction);
}
at::Tensor& vk_mse_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                       at::Tensor& out) {
  return out_write(out, vk_mse(self, target, reduction));
}
at::Tensor vk_mse_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                           int64_t reduction) {
  at::Tensor g = 2 * (self - target) * grad_scale(grad, self, reduction);
  return g.expand(self.sizes()).contiguous();
}
at::Tensor& vk_mse_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                const at::Tensor& target, int64_t reduction,
                                at::Tensor& grad_input) {
  return out_write(grad_input, vk_mse_backward(grad, self, target, reduction));
}

at::Tensor vk_smooth_l1(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                        double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  at::Tensor z = (self - target).abs();
  at::Tensor loss = beta == 0 ? z : at::where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta);
  return apply_reduction(loss, reduction);
}
at::Tensor& vk_smooth_l1_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                             double beta, at::Tensor& out) {
  return out_write(out, vk_smooth_l1(self, target, reduction, beta));
}
// The gradient of both: -k*g below -beta, k*g above beta, slope*x*g between.
at::Tensor piecewise_grad(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                          int64_t reduction, double beta, double k, double slope) {
  at::Tensor x = self - target;
  at::Tensor g = grad_scale(grad, self, reduction);
  at::Tensor mid = beta == 0 ? at::zeros_like(x) : x * slope;
  at::Tensor r = at::where(x <= -beta, -k, at::where(x >= beta, k, mid)) * g;
  return r.expand(self.sizes()).contiguous();
}
at::Tensor vk_smooth_l1_backward(const at::Tensor& grad, const at::Tensor& self,
                                 const at::Tensor& target, int64_t reduction, double beta) {
  return piecewise_grad(grad, self, target, reduction, beta, 1.0, beta == 0 ? 0.0 : 1.0 / beta);
}
at::Tensor& vk_smooth_l1_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                      const at::Tensor& target, int64_t reduction, double beta,
                                      at::Tensor& grad_input) {
  return out_write(grad_input, vk_smooth_l1_backward(grad, self, target, reduction, beta));
}

at::Tensor vk_huber(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                    double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  at::Tensor z = (self - target).abs();
  at::Tensor loss = at::where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta));
  return apply_reduction(loss, reduction);
}
at::Tensor& vk_huber_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                         double delta, at::Tensor& out) {
  return out_write(out, vk_huber(self, target, reduction, delta));
}
at::Tensor vk_huber_backward(const at::Tensor& grad, const at::Tensor& self,
                             const at::Tensor& target, int64_t reduction, double delta) {
  return piecewise_grad(grad, self, target, reduction, delta, delta, 1.0);
}
at::Tensor& vk_huber_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                  const at::Tensor& target, int64_t reduction, double delta,
                                  at::Tensor& grad_input) {
  return out_write(grad_input, vk_huber_backward(grad, self, target, reduction, delta));
}

// ----------------------------------------------------------------- margin losses
// Per-sample losses from margin_loss.comp in float32; the reduction and the dtype
// round trip are native ops here.

void check_margin_dtype(const char* op, const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      at::isFloatingType(self.scalar_type()) && self.scalar_type() != at::kDouble, op,
      " on vkml supports float32, float16 and bfloat16, got ", self.scalar_type());
}

// Targets outside [lo, c) are noted on the device and raised, with the CPU's message
// (`code`, shaders/device_error.h), at the next read of the device: no wait here.
void check_target_range(const at::Tensor& target, int64_t lo, int64_t c, uint32_t code) {
  if (target.numel() == 0) return;
  at::Tensor t = target.to(at::kLong).contiguous();
  guarded([&] { vkml::ops::check_int_range(vkml_device(t), ref(t), lo, c - 1, code, code); });
}

struct MarginRows {
  at::Tensor x, target;
  int64_t n = 0, c = 0;
};

// PyTorch's shape rule for both margin losses: a non-empty vector or matrix.
void check_margin_input(const at::Tensor& self) {
  int64_t nd = self.dim();
  TORCH_CHECK((nd == 2 && self.size(1) != 0) || (nd == 1 && self.size(0) != 0) || nd == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
}

MarginRows multi_rows(const at::Tensor& self, const at::Tensor& target) {
  check_margin_dtype("multi_margin_loss", self);
  check_margin_input(self);
  MarginRows r;
  r.c = self.dim() == 0 ? 1 : self.size(-1);
  r.n = self.dim() <= 1 ? 1 : self.size(0);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == r.n,
              "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
              "input samples (batch size). Expected target size [",
              r.n, "], but got ", target.sizes(), ". Input has shape ", self.sizes(), ".");
  check_target_range(target, 0, r.c, DEVICE_ERROR_MULTI_MARGIN_TARGET);
  r.x = self.to(at::kFloat).reshape({r.n, r.c}).contiguous();
  r.target = target.to(at::kLong).reshape({r.n}).contiguous();
  return r;
}

vkml::ops::MarginLossArgs multi_args(const MarginRows& r, const at::Scalar& p,
                                     const at::Scalar& margin, const at::Tensor& w) {
  TORCH_CHECK(p.toDouble() == 1 || p.toDouble() == 2, "only p == 1 and p == 2 supported");
  vkml::ops::MarginLossArgs a;
  a.kind = vkml::ops::MarginLoss::Multi;
  a.x = addr(r.x);
  a.target = addr(r.target);
  a.weight = w.defined() ? addr(w) : 0;
  a.n = r.n;
  a.c = r.c;
  a.p = int(p.toDouble());
  a.margin = float(margin.toDouble());
  return a;
}

at::Tensor margin_weight(const std::optional<at::Tensor>& weight, int64_t c) {
  if (!weight.has_value() || !weight->defined()) return {};
  TORCH_CHECK(weight->dim() <= 1 && weight->numel() == c, "inconsistent weight size, expected ", c,
              " but got ", weight->sizes());
  return weight->to(at::kFloat).contiguous();
}

// Per-sample losses [n] float32 to the op's output (dtype and shape of the CPU's).
at::Tensor reduce_margin(const at::Tensor& per_sample, int64_t reduction, bool batched,
                         at::ScalarType dtype) {
  at::Tensor r = reduction == at::Reduction::None ? (batched ? per_sample : per_sample.reshape({}))
                                                  : apply_reduction(per_sample, reduction);
  return r.to(dtype);
}

// grad_output to the per-sample factor of margin_loss.comp.
at::Tensor grad_factor(const at::Tensor& grad, int64_t n, int64_t reduction) {
  at::Tensor g = grad.to(at::kFloat);
  if (reduction == at::Reduction::Mean && n > 0) g = g / double(n);
  if (reduction == at::Reduction::None) return g.reshape({n}).contiguous();
  return g.reshape({1}).expand({n}).contiguous();
}

// One thread walks a row's classes: past the device's loop iteration limit (lavapipe
// stops such loops short, silently: 150000 classes gave a loss 37 % off) the loss takes
// the counted CPU route, as float64 (no kernel) does.
bool multi_margin_on_cpu(const at::Tensor& self) {
  if (self.scalar_type() == at::kDouble) return true;
  return past_loop_limit(self, self.dim() == 0 ? 1 : self.size(-1));
}

at::Tensor vk_multi_margin(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                           const at::Scalar& margin, const std::optional<at::Tensor>& weight,
                           int64_t reduction) {
  if (multi_margin_on_cpu(self)) {
    return cpu_route<at::_ops::multi_margin_loss>(self, target, p, margin, weight, reduction);
  }
  MarginRows r = multi_rows(self, target);
  at::Tensor w = margin_weight(weight, r.c);
  auto a = multi_args(r, p, margin, w);
  at::Tensor loss = at::empty({r.n}, r.x.options());
  guarded([&] { vkml::ops::margin_loss_forward(vkml_device(r.x), a, addr(loss)); });
  return reduce_margin(loss, reduction, target.dim() > 0, self.scalar_type());
}
at::Tensor& vk_multi_margin_out(const at::Tensor& self, const at::Tensor& target,
                                const at::Scalar& p, const at::Scalar& margin,
                                const std::optional<at::Tensor>& weight, int64_t reduction,
                                at::Tensor& out) {
  return out_write(out, vk_multi_margin(self, target, p, margin, weight, reduction));
}
at::Tensor vk_multi_margin_backward(const at::Tensor& grad, const at::Tensor& self,
                                    const at::Tensor& target, const at::Scalar& p,
                                    const at::Scalar& margin,
                                    const std::optional<at::Tensor>& weight, int64_t reduction) {
  if (multi_margin_on_cpu(self)) {
    return cpu_route<at::_ops::multi_margin_loss_backward>(grad, self, target, p, margin, weight,
                                                           reduction);
  }
  MarginRows r = multi_rows(self, target);
  at::Tensor w = margin_weight(weight, r.c);
  auto a = multi_args(r, p, margin, w);
  at::Tensor g = grad_factor(grad, r.n, reduction);
  at::Tensor gi = at::empty({r.n, r.c}, r.x.options());
  guarded([&] { vkml::ops::margin_loss_backward(vkml_device(r.x), a, addr(g), addr(gi)); });
  return gi.view(self.sizes()).to(self.scalar_type());
}
at::Tensor& vk_multi_margin_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                         const at::Tensor& target, const at::Scalar& p,
                                         const at::Scalar& margin,
                                         const std::optional<at::Tensor>& weight, int64_t reduction,
                                         at::Tensor& grad_input) {
  return out_write(grad_input,
                   vk_multi_margin_backward(grad, self, target, p, margin, weight, reduction));
}

MarginRows multilabel_rows(const at::Tensor& self, const at::Tensor& target) {
  check_margin_dtype("multilabel_margin_loss", self);
  check_margin_input(self);
  MarginRows r;
  r.c = self.dim() == 0 ? 1 : self.size(-1);
  r.n = self.dim() <= 1 ? 1 : self.size(0);
  bool ok = self.dim() <= 1 ? target.dim() <= 1 && target.numel() == r.c
                            : target.dim() == 2 && target.size(0) == r.n && target.size(1) == r.c;
  TORCH_CHECK(ok, "inconsistent target size: ", target.sizes(),
              " for input of size: ", self.sizes());
  check_target_range(target, -1, r.c, DEVICE_ERROR_MULTILABEL_MARGIN_TARGET);
  r.x = self.to(at::kFloat).reshape({r.n, r.c}).contiguous();
  r.target = target.to(at::kLong).reshape({r.n, r.c}).contiguous();
  return r;
}

vkml::ops::MarginLossArgs multilabel_args(const MarginRows& r, const at::Tensor& is_target) {
  vkml::ops::MarginLossArgs a;
  a.kind = vkml::ops::MarginLoss::MultiLabel;
  a.x = addr(r.x);
  a.target = addr(r.target);
  a.is_target = addr(is_target);
  a.n = r.n;
  a.c = r.c;
  return a;
}

// One thread walks a row's targets against its classes, c^2 steps: past the device's
// loop iteration limit (Mesa 22.3's lavapipe stops such loops short, silently) the loss
// takes the counted CPU route, as float64 (no kernel) does.
bool multilabel_on_cpu(const at::Tensor& self) {
  if (self.scalar_type() == at::kDouble) return true;
  const int64_t c = self.dim() == 0 ? 1 : self.size(-1);
  return past_loop_limit(self, c * c);
}

std::tuple<at::Tensor, at::Tensor> vk_multilabel_forward(const at::Tensor& self,
                                                         const at::Tensor& target,
                                                         int64_t reduction) {
  if (multilabel_on_cpu(self))
    return cpu_route<at::_ops::multilabel_margin_loss_forward>(self, target, reduction);
  MarginRows r = multilabel_rows(self, target);
  at::Tensor is_target = at::empty({r.n, r.c}, r.x.options());
  at::Tensor loss = at::empty({r.n}, r.x.options());
  auto a = multilabel_args(r, is_target);
  guarded([&] { vkml::ops::margin_loss_forward(vkml_device(r.x), a, addr(loss)); });
  return {reduce_margin(loss, reduction, target.dim() > 1, self.scalar_type()),
          is_target.view(target.sizes()).to(self.scalar_type())};
}
std::tuple<at::Tensor&, at::Tensor&> vk_multilabel_forward_out(const at::Tensor& self,
                                                               const at::Tensor& target,
                                                               int64_t reduction,
                                                               at::Tensor& output,
                                                               at::Tensor& is_target) {
  auto [o, t] = vk_multilabel_forward(self, target, reduction);
  out_write(output, o);
  out_write(is_target, t);
  return {output, is_target};
}
at::Tensor vk_multilabel_backward(const at::Tensor& grad, const at::Tensor& self,
                                  const at::Tensor& target, int64_t reduction,
                                  const at::Tensor& is_target) {
  if (multilabel_on_cpu(self))
    return cpu_route<at::_ops::multilabel_margin_loss_backward>(grad, self, target, reduction,
                                                                is_target);
  MarginRows r = multilabel_rows(self, target);
  TORCH_CHECK(is_target.sizes() == target.sizes(),
              "inconsistent is_target size: ", is_target.sizes(),
              " for target of size: ", target.sizes());
  at::Tensor it = is_target.to(at::kFloat).reshape({r.n, r.c}).contiguous();
  auto a = multilabel_args(r, it);
  at::Tensor g = grad_factor(grad, r.n, reduction);
  at::Tensor gi = at::empty({r.n, r.c}, r.x.options());
  guarded([&] { vkml::ops::margin_loss_backward(vkml_device(r.x), a, addr(g), addr(gi)); });
  return gi.view(self.sizes()).to(self.scalar_type());
}
at::Tensor& vk_multilabel_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                       const at::Tensor& target, int64_t reduction,
                                       const at::Tensor& is_target, at::Tensor& grad_input) {
  return out_write(grad_input, vk_multilabel_backward(grad, self, target, reduction, is_target));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("binary_cross_entropy", TORCH_FN(vk_bce));
  m.impl("binary_cross_entropy.out", TORCH_FN(vk_bce_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(vk_bce_backward));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(vk_bce_backward_out));
  m.impl("nll_loss_forward", TORCH_FN(nll_forward));
  m.impl("nll_loss_forward.output", TORCH_FN(nll_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(nll_backward));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll2d_forward));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(nll2d_backward));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll2d_backward_out));
  m.impl("mse_loss", TORCH_FN(vk_mse));
  m.impl("mse_loss.out", TORCH_FN(vk_mse_out));
  m.impl("mse_loss_backward", TORCH_FN(vk_mse_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(vk_mse_backward_out));
  m.impl("smooth_l1_loss", TORCH_FN(vk_smooth_l1));
  m.impl("smooth_l1_loss.out", TORCH_FN(vk_smooth_l1_out));
  m.impl("smooth_l1_loss_backward", TORCH_FN(vk_smooth_l1_backward));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(vk_smooth_l1_backward_out));
  m.impl("huber_loss", TORCH_FN(vk_huber));
  m.impl("huber_loss.out", TORCH_FN(vk_huber_out));
  m.impl("huber_loss_backward", TORCH_FN(vk_huber_backward));
  m.impl("huber_loss_backward.out", TORCH_FN(vk_huber_backward_out));
  m.impl("multi_margin_loss", TORCH_FN(vk_multi_margin));
  m.impl("multi_margin_loss.out", TORCH_FN(vk_multi_margin_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(vk_multi_margin_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(vk_multi_margin_backward_out));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(vk_multilabel_forward));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(vk_multilabel_forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(vk_multilabel_backward));
  m.impl("multilabel_margin_loss_backward.grad_input", TORCH_FN(vk_multilabel_backward_out));
}

}  // namespace vkml_aten
