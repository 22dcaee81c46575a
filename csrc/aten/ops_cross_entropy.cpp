// cross_entropy_loss with class-index targets as one fused kernel forward and one
// backward (vkml/ops/cross_entropy.h). ATen decomposes it into log_softmax and
// nll_loss, which store the [n, c] log-probabilities and pass over them five times
// (an LM's logits are the largest tensor of its step). The fused forward reads the
// scores once and keeps a log-sum-exp per row; backward reads them once more and
// writes the gradient.
//
// cross_entropy_loss is a composite op, so the fused path is its own autograd
// function, registered for AutogradPrivateUse1 (and for PrivateUse1, which inference
// mode reaches). Calls it does not cover (probability targets, float64, forward-mode
// AD, a weight that needs a grad, shapes or devices that are wrong) take ATen's
// decomposition, which also raises ATen's errors.
#include <ATen/ops/cross_entropy_loss_native.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "vkml/ops/cross_entropy.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool on_vkml(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

bool fused_applies(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight,
                   int64_t reduction, double smoothing) {
  if (!on_vkml(self) || !is_float_storage(self.scalar_type())) return false;
  if (!on_vkml(target) || target.scalar_type() != at::kLong) return false;
  if (self.dim() < 1 || target.dim() != self.dim() - 1) return false;
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  if (self.size(class_dim) == 0) return false;
  for (int64_t d = 0, k = 0; d < self.dim(); ++d)
    if (d != class_dim && self.size(d) != target.size(k++)) return false;
  if (weight.defined() &&
      (!on_vkml(weight) || weight.scalar_type() != self.scalar_type() || weight.dim() != 1 ||
       weight.numel() != self.size(class_dim) || weight.requires_grad()))
    return false;
  if (reduction < 0 || reduction > 2 || !(smoothing >= 0.0 && smoothing <= 1.0)) return false;
  return !self._fw_grad(/*level=*/0).defined();
}

// The scores as [n, c] rows and the targets as [n]: the class dim moves last
// (differentiably, so autograd maps the rows' gradient back).
std::pair<at::Tensor, at::Tensor> as_rows(const at::Tensor& self, const at::Tensor& target) {
  if (self.dim() == 1) return {self.unsqueeze(0), target.reshape({1})};
  if (self.dim() == 2) return {self, target};
  return {self.movedim(1, -1).reshape({-1, self.size(1)}), target.reshape({-1})};
}

struct Forward {
  at::Tensor output, lse, total, weight_sum;
};

vkml::ops::CrossEntropyArgs args_for(const at::Tensor& x, const at::Tensor& target,
                                     const at::Tensor& weight, const at::Tensor& weight_sum,
                                     int64_t reduction, int64_t ignore_index, double smoothing) {
  vkml::ops::CrossEntropyArgs a;
  a.dtype = to_vkml(x.scalar_type());
  a.scores = addr(x);
  a.target = addr(target);
  a.weight = weight.defined() ? addr(weight) : 0;
  a.weight_sum = weight_sum.defined() ? addr(weight_sum) : 0;
  a.n = x.size(0);
  a.c = x.size(1);
  a.ignore_index = ignore_index;
  a.label_smoothing = float(smoothing);
  a.reduction = static_cast<vkml::ops::Reduction>(reduction);
  return a;
}

// scores, target and weight contiguous, on one device.
Forward run_forward(const at::Tensor& x, const at::Tensor& target, const at::Tensor& weight,
                    int64_t reduction, int64_t ignore_index, double smoothing) {
  const bool none = reduction == at::Reduction::None;
  const auto f32 = x.options().dtype(at::kFloat);
  Forward f;
  f.lse = at::empty({x.size(0)}, f32);
  f.total = at::empty({}, f32);
  if (weight.defined() && smoothing != 0.0) f.weight_sum = weight.sum(0, false, at::kFloat);
  f.output = at::empty(none ? at::IntArrayRef{x.size(0)} : at::IntArrayRef{}, x.options());
  at::Tensor rows = none ? at::Tensor() : at::empty({x.size(0)}, f32);
  auto a = args_for(x, target, weight, f.weight_sum, reduction, ignore_index, smoothing);
  a.lse = addr(f.lse);
  a.total_weight = addr(f.total);
  guarded([&] {
    vkml::ops::cross_entropy_forward(vkml_device(x), a, addr(f.output),
                                     rows.defined() ? addr(rows) : 0);
  });
  return f;
}

// The gradient as differentiable ops, for a backward that builds a graph
// (create_graph=True): the fused kernel has no derivative of its own.
at::Tensor differentiable_grad(const at::Tensor& x, const at::Tensor& target,
                               const at::Tensor& weight, const at::Tensor& grad,
                               const at::Tensor& total, int64_t reduction, int64_t ignore_index,
                               double smoothing) {
  const int64_t c = x.size(1);
  at::Tensor counted = target.ne(ignore_index);
  at::Tensor t = target.masked_fill(counted.logical_not(), 0);
  at::Tensor p = at::softmax(x, 1, at::kFloat);
  at::Tensor w = weight.defined() ? weight.to(at::kFloat) : at::ones({c}, p.options());
  at::Tensor wt = w.index_select(0, t) * counted * (1.0 - smoothing);
  at::Tensor d = (p - at::one_hot(t, c).to(at::kFloat)) * wt.unsqueeze(1);
  if (smoothing != 0.0)
    d = d + (p * w.sum() - w.unsqueeze(0)) * (counted.unsqueeze(1) * (smoothing / double(c)));
  at::Tensor g = grad.to(at::kFloat);
  if (reduction == at::Reduction::Mean) g = g / total;
  if (reduction == at::Reduction::None) g = g.unsqueeze(1);
  return (d * g).to(x.scalar_type());
}

class FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& scores,
                            const at::Tensor& target, const std::optional<at::Tensor>& weight,
                            int64_t reduction, int64_t ignore_index, double smoothing) {
    at::Tensor x = scores.contiguous(), t = target.contiguous();
    at::Tensor w = weight.has_value() && weight->defined() ? weight->contiguous() : at::Tensor();
    Forward f = run_forward(x, t, w, reduction, ignore_index, smoothing);
    ctx->save_for_backward({scores, target});
    ctx->saved_data["weight"] = w;
    ctx->saved_data["lse"] = f.lse;
    ctx->saved_data["total"] = f.total;
    ctx->saved_data["weight_sum"] = f.weight_sum;
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->saved_data["smoothing"] = smoothing;
    return f.output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    at::Tensor x = saved[0].contiguous(), target = saved[1].contiguous();
    at::Tensor weight = ctx->saved_data["weight"].toTensor();
    const int64_t reduction = ctx->saved_data["reduction"].toInt();
    const int64_t ignore_index = ctx->saved_data["ignore_index"].toInt();
    const double smoothing = ctx->saved_data["smoothing"].toDouble();
    at::Tensor total = ctx->saved_data["total"].toTensor();
    at::Tensor grad = grads[0].contiguous();
    at::Tensor grad_input;
    if (at::GradMode::is_enabled()) {
      grad_input =
          differentiable_grad(x, target, weight, grad, total, reduction, ignore_index, smoothing);
    } else {
      grad_input = at::empty_like(x, at::MemoryFormat::Contiguous);
      auto a = args_for(x, target, weight, ctx->saved_data["weight_sum"].toTensor(), reduction,
                        ignore_index, smoothing);
      a.lse = addr(ctx->saved_data["lse"].toTensor());
      a.total_weight = addr(total);
      guarded([&] {
        vkml::ops::cross_entropy_backward(vkml_device(x), a, addr(grad), addr(grad_input));
      });
    }
    return {grad_input, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor composite(const at::Tensor& self, const at::Tensor& target,
                     const std::optional<at::Tensor>& weight, int64_t reduction,
                     c10::SymInt ignore_index, double smoothing) {
  return at::native::cross_entropy_loss_symint(self, target, weight, reduction,
                                               std::move(ignore_index), smoothing);
}

// The fused path, through `fused(scores, target, weight, ignore_index)` on [n, c] rows,
// or ATen's decomposition for the calls it does not cover.
template <class Fused>
at::Tensor fused_or_composite(const at::Tensor& self, const at::Tensor& target,
                              const std::optional<at::Tensor>& weight, int64_t reduction,
                              c10::SymInt ignore_index, double smoothing, Fused fused) {
  at::Tensor w = weight.value_or(at::Tensor());
  if (!fused_applies(self, target, w, reduction, smoothing))
    return composite(self, target, weight, reduction, std::move(ignore_index), smoothing);
  auto [scores, t] = as_rows(self, target);
  at::Tensor out = fused(scores, t, w, ignore_index.guard_int(__FILE__, __LINE__));
  return reduction == at::Reduction::None ? out.reshape(target.sizes()) : out;
}

at::Tensor cross_entropy_autograd(const at::Tensor& self, const at::Tensor& target,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  c10::SymInt ignore_index, double smoothing) {
  return fused_or_composite(
      self, target, weight, reduction, std::move(ignore_index), smoothing,
      [&](const at::Tensor& scores, const at::Tensor& t, const at::Tensor& w, int64_t ignore) {
        auto w_arg = w.defined() ? std::optional<at::Tensor>(w) : std::nullopt;
        return FusedCrossEntropy::apply(scores, t, w_arg, reduction, ignore, smoothing);
      });
}

// Below autograd (inference mode): the forward kernels alone.
at::Tensor cross_entropy_no_grad(const at::Tensor& self, const at::Tensor& target,
                                 const std::optional<at::Tensor>& weight, int64_t reduction,
                                 c10::SymInt ignore_index, double smoothing) {
  return fused_or_composite(
      self, target, weight, reduction, std::move(ignore_index), smoothing,
      [&](const at::Tensor& scores, const at::Tensor& t, const at::Tensor& w, int64_t ignore) {
        return run_forward(scores.contiguous(), t.contiguous(), w.defined() ? w.contiguous() : w,
                           reduction, ignore, smoothing)
            .output;
      });
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("cross_entropy_loss", TORCH_FN(cross_entropy_autograd));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cross_entropy_loss", TORCH_FN(cross_entropy_no_grad));
}

}  // namespace vkml_aten
