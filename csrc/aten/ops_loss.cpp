// nll_loss forward and backward (cross_entropy = log_softmax + nll_loss), and
// binary_cross_entropy.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "vkml/ops/loss.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

vkml::ops::NllLossArgs args_for(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight, int64_t reduction,
                                int64_t ignore_index, at::Tensor& input, at::Tensor& tgt,
                                at::Tensor& w) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1,
              "0D or 1D target tensor expected, multi-target not supported");
  bool no_batch = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch || self.size(0) == target.size(0), "size mismatch (got input: ",
              self.sizes(), ", target: ", target.sizes(), ")");
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected scalar type Long but found ", target.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(self.scalar_type()),
                              "nll_loss on vkml supports float32, float16 and bfloat16, got ",
                              self.scalar_type());
  input = self.contiguous();
  tgt = target.to(at::kLong).contiguous();
  int64_t c = self.size(-1);
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->numel() == c, "weight tensor should be defined either for all ", c,
                " classes or no classes but got weight tensor of shape: ", weight->sizes());
    w = weight->to(self.scalar_type()).contiguous();
  }
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

std::tuple<at::Tensor, at::Tensor> nll_forward(const at::Tensor& self,
                                                    const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight,
                                                    int64_t reduction, int64_t ignore_index) {
  at::Tensor input, tgt, w;
  auto a = args_for(self, target, weight, reduction, ignore_index, input, tgt, w);
  bool none = reduction == 0 && self.dim() == 2;
  at::Tensor output = at::empty(none ? at::IntArrayRef{self.size(0)} : at::IntArrayRef{},
                                self.options());
  at::Tensor total_weight = at::empty({}, self.options());
  a.output = addr(output);
  a.total_weight = addr(total_weight);
  if (reduction == 0 && self.dim() == 1) a.reduction = vkml::ops::Reduction::Sum;
  if (a.n == 0 && none) return {output, total_weight};
  guarded([&] { vkml::ops::nll_loss_forward(vkml_device(self), a); });
  return {output, total_weight};
}

std::tuple<at::Tensor&, at::Tensor&> nll_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  auto [o, t] = nll_forward(self, target, weight, reduction, ignore_index);
  at::native::resize_output(output, o.sizes());
  output.copy_(o);
  at::native::resize_output(total_weight, t.sizes());
  total_weight.copy_(t);
  return {output, total_weight};
}

at::Tensor nll_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight,
                             int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  at::Tensor input, tgt, w;
  auto a = args_for(self, target, weight, reduction, ignore_index, input, tgt, w);
  if (reduction == 0 && self.dim() == 1) a.reduction = vkml::ops::Reduction::Sum;
  at::Tensor tw = total_weight.to(self.scalar_type()).contiguous();
  a.total_weight = addr(tw);
  at::Tensor go = grad_output.to(self.scalar_type()).contiguous();
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  guarded([&] {
    vkml::ops::nll_loss_backward(vkml_device(self), a, addr(go), addr(grad_input));
  });
  return grad_input;
}

at::Tensor& nll_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  int64_t ignore_index, const at::Tensor& total_weight,
                                  at::Tensor& grad_input) {
  at::Tensor r = nll_backward(grad_output, self, target, weight, reduction, ignore_index,
                                   total_weight);
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
              ") that is different to the input size (", self.sizes(), ") is deprecated. "
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
at::Tensor vk_bce_backward(const at::Tensor& grad, const at::Tensor& self,
                           const at::Tensor& target, const std::optional<at::Tensor>& weight,
                           int64_t reduction) {
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
}

}  // namespace vkml_aten
