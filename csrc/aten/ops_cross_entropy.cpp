// cross_entropy_loss with class-index targets as one fused kernel forward and one
// backward (vkml/ops/cross_entropy.h). ATen decomposes it into log_softmax and
// nll_loss, which store the [n, c] log-probabilities and pass over them five times
// (an LM's logits are the largest tensor of its step). The fused forward reads the
// scores once and keeps a log-sum-exp per row; backward reads them once more and
// writes the gradient.
//
// The kernels are two custom ops on [n, c] rows, vkml::cross_entropy_forward and
// vkml::cross_entropy_backward, each with a PrivateUse1 kernel and a Meta kernel that
// gives the results' shapes and dtypes without touching data. cross_entropy_loss is a
// composite op, so the fused path is its own autograd function, registered for
// AutogradPrivateUse1 (and for PrivateUse1, which inference mode reaches), whose
// forward and backward call those ops: torch.compile traces them on fake tensors
// through the Meta kernels and its graphs call the fused kernels. Calls the fused path
// does not cover (probability targets, float64, forward-mode AD, torch.func transforms,
// which refuse C++ autograd Functions, a weight that needs a grad, shapes or devices that
// are wrong) take ATen's decomposition, which also raises ATen's errors.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/cross_entropy_loss_native.h>
#include <c10/core/SymBool.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "functorch_state.h"
#include "vkml/ops/cross_entropy.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool on_vkml(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

// Sizes are compared as SymInts (guarding), so that dynamic shapes under torch.compile
// take the fused path too.
bool fused_applies(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight,
                   int64_t reduction, double smoothing) {
  if (!on_vkml(self) || !is_float_storage(self.scalar_type())) return false;
  if (!on_vkml(target) || target.scalar_type() != at::kLong) return false;
  if (self.dim() < 1 || target.dim() != self.dim() - 1) return false;
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  if (self.sym_size(class_dim) == 0) return false;
  for (int64_t d = 0, k = 0; d < self.dim(); ++d)
    if (d != class_dim && self.sym_size(d) != target.sym_size(k++)) return false;
  if (weight.defined() &&
      (!on_vkml(weight) || weight.scalar_type() != self.scalar_type() || weight.dim() != 1 ||
       weight.sym_numel() != self.sym_size(class_dim) || weight.requires_grad()))
    return false;
  if (reduction < 0 || reduction > 2 || !(smoothing >= 0.0 && smoothing <= 1.0)) return false;
  return !has_tangent(self) && !under_functorch();
}

// The scores as [n, c] rows and the targets as [n]: the class dim moves last
// (differentiably, so autograd maps the rows' gradient back).
std::pair<at::Tensor, at::Tensor> as_rows(const at::Tensor& self, const at::Tensor& target) {
  if (self.dim() == 1) return {self.unsqueeze(0), target.reshape({1})};
  if (self.dim() == 2) return {self, target};
  return {self.movedim(1, -1).reshape_symint({-1, self.sym_size(1)}), target.reshape({-1})};
}

// ------------------------------------------------------------------ the custom ops

// What both ops take, checked on vkml and on meta tensors alike: [n, c] scores of a
// float dtype, [n] int64 targets, an optional [c] weight of the scores' dtype.
void check_rows(const char* op, const at::Tensor& scores, const at::Tensor& target,
                const std::optional<at::Tensor>& weight, int64_t reduction, double smoothing) {
  TORCH_CHECK(scores.dim() == 2 && is_float_storage(scores.scalar_type()), op,
              ": scores must be [n, c] float32, float16 or bfloat16, got ", scores.dim(), "-d ",
              scores.scalar_type());
  TORCH_CHECK(target.dim() == 1 && target.scalar_type() == at::kLong, op,
              ": target must be [n] int64");
  TORCH_SYM_CHECK(target.sym_size(0).sym_eq(scores.sym_size(0)), op,
                  ": scores and target disagree on n");
  TORCH_CHECK(target.device() == scores.device(), op, ": target on another device");
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->dim() == 1 && weight->scalar_type() == scores.scalar_type() &&
                    weight->device() == scores.device(),
                op, ": weight must be [c] of the scores' dtype and device");
    TORCH_SYM_CHECK(weight->sym_size(0).sym_eq(scores.sym_size(1)), op,
                    ": weight must have c elements");
  }
  TORCH_CHECK(reduction >= 0 && reduction <= 2, op, ": reduction must be 0, 1 or 2");
  TORCH_CHECK(smoothing >= 0.0 && smoothing <= 1.0, op, ": label_smoothing must be in [0, 1]");
}

at::Tensor defined_or_empty(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : at::Tensor();
}

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

// The weights' sum, which label smoothing needs, in float32.
at::Tensor weight_sum_of(const at::Tensor& weight, double smoothing) {
  return weight.defined() && smoothing != 0.0 ? weight.sum(0, false, at::kFloat) : at::Tensor();
}

using CrossEntropyForward = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// vkml::cross_entropy_forward: the loss (reduction none: [n], else a scalar, in the
// scores' dtype), each row's log-sum-exp (float32 [n]) and the total weight of the
// counted rows (float32 [], or [0] for reduction none, whose backward needs none),
// which the backward takes.
CrossEntropyForward forward_vkml(const at::Tensor& scores, const at::Tensor& target,
                                 const std::optional<at::Tensor>& weight, int64_t reduction,
                                 int64_t ignore_index, double smoothing) {
  constexpr const char* op = "vkml::cross_entropy_forward";
  check_rows(op, scores, target, weight, reduction, smoothing);
  TORCH_CHECK(on_vkml(scores), op, ": scores must be on vkml");
  at::Tensor x = scores.contiguous(), t = target.contiguous(), w = defined_or_empty(weight);
  const bool none = reduction == at::Reduction::None;
  const auto f32 = x.options().dtype(at::kFloat);
  at::Tensor lse = at::empty({x.size(0)}, f32);
  at::Tensor total = none ? at::empty({0}, f32) : at::empty({}, f32);
  at::Tensor weight_sum = weight_sum_of(w, smoothing);
  at::Tensor output = at::empty(none ? at::IntArrayRef{x.size(0)} : at::IntArrayRef{}, x.options());
  at::Tensor rows = none ? at::Tensor() : at::empty({x.size(0)}, f32);
  auto a = args_for(x, t, w, weight_sum, reduction, ignore_index, smoothing);
  a.lse = addr(lse);
  a.total_weight = none ? 0 : addr(total);
  guarded([&] {
    vkml::ops::cross_entropy_forward(vkml_device(x), a, addr(output),
                                     rows.defined() ? addr(rows) : 0);
  });
  return {output, lse, total};
}

CrossEntropyForward forward_meta(const at::Tensor& scores, const at::Tensor& target,
                                 const std::optional<at::Tensor>& weight, int64_t reduction,
                                 int64_t, double smoothing) {
  check_rows("vkml::cross_entropy_forward", scores, target, weight, reduction, smoothing);
  const auto f32 = scores.options().dtype(at::kFloat);
  const c10::SymInt n = scores.sym_size(0);
  if (reduction == at::Reduction::None)
    return {at::empty_symint({n}, scores.options()), at::empty_symint({n}, f32),
            at::empty({0}, f32)};
  return {at::empty({}, scores.options()), at::empty_symint({n}, f32), at::empty({}, f32)};
}

// vkml::cross_entropy_backward: the scores' gradient, [n, c] contiguous, from the
// loss's gradient and the forward's log-sum-exp and total weight.
at::Tensor backward_vkml(const at::Tensor& grad, const at::Tensor& scores, const at::Tensor& target,
                         const std::optional<at::Tensor>& weight, const at::Tensor& lse,
                         const at::Tensor& total, int64_t reduction, int64_t ignore_index,
                         double smoothing) {
  constexpr const char* op = "vkml::cross_entropy_backward";
  check_rows(op, scores, target, weight, reduction, smoothing);
  TORCH_CHECK(on_vkml(scores), op, ": scores must be on vkml");
  TORCH_CHECK(grad.scalar_type() == scores.scalar_type() && grad.device() == scores.device(), op,
              ": grad must have the scores' dtype and device");
  TORCH_CHECK(reduction == at::Reduction::None ? grad.dim() == 1 && grad.size(0) == scores.size(0)
                                               : grad.numel() == 1,
              op, ": grad must have the loss's shape");
  TORCH_CHECK(lse.scalar_type() == at::kFloat && lse.dim() == 1 && lse.size(0) == scores.size(0) &&
                  total.scalar_type() == at::kFloat &&
                  total.numel() == (reduction == at::Reduction::None ? 0 : 1) &&
                  lse.device() == scores.device() && total.device() == scores.device(),
              op, ": lse and total_weight must be what cross_entropy_forward returned");
  at::Tensor x = scores.contiguous(), t = target.contiguous(), w = defined_or_empty(weight);
  at::Tensor g = grad.contiguous(), l = lse.contiguous(), tw = total.contiguous();
  at::Tensor weight_sum = weight_sum_of(w, smoothing);
  at::Tensor grad_input = at::empty_like(x, at::MemoryFormat::Contiguous);
  auto a = args_for(x, t, w, weight_sum, reduction, ignore_index, smoothing);
  a.lse = addr(l);
  a.total_weight = reduction == at::Reduction::None ? 0 : addr(tw);
  guarded([&] { vkml::ops::cross_entropy_backward(vkml_device(x), a, addr(g), addr(grad_input)); });
  return grad_input;
}

at::Tensor backward_meta(const at::Tensor&, const at::Tensor& scores, const at::Tensor& target,
                         const std::optional<at::Tensor>& weight, const at::Tensor&,
                         const at::Tensor&, int64_t reduction, int64_t, double smoothing) {
  check_rows("vkml::cross_entropy_backward", scores, target, weight, reduction, smoothing);
  return at::empty_symint(scores.sym_sizes(), scores.options());
}

// The ops through the dispatcher, so that tracing (fake, functional tensors) sees them.
CrossEntropyForward call_forward(const at::Tensor& scores, const at::Tensor& target,
                                 const std::optional<at::Tensor>& weight, int64_t reduction,
                                 int64_t ignore_index, double smoothing) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("vkml::cross_entropy_forward", "")
                       .typed<decltype(forward_vkml)>();
  return op.call(scores, target, weight, reduction, ignore_index, smoothing);
}

at::Tensor call_backward(const at::Tensor& grad, const at::Tensor& scores, const at::Tensor& target,
                         const std::optional<at::Tensor>& weight, const at::Tensor& lse,
                         const at::Tensor& total, int64_t reduction, int64_t ignore_index,
                         double smoothing) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("vkml::cross_entropy_backward", "")
                       .typed<decltype(backward_vkml)>();
  return op.call(grad, scores, target, weight, lse, total, reduction, ignore_index, smoothing);
}

// ------------------------------------------------------------------ autograd

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
    auto [output, lse, total] =
        call_forward(scores, target, weight, reduction, ignore_index, smoothing);
    ctx->save_for_backward({scores, target, weight.value_or(at::Tensor()), lse, total});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->saved_data["smoothing"] = smoothing;
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &target = saved[1], &weight = saved[2];
    const at::Tensor &lse = saved[3], &total = saved[4];
    const int64_t reduction = ctx->saved_data["reduction"].toInt();
    const int64_t ignore_index = ctx->saved_data["ignore_index"].toInt();
    const double smoothing = ctx->saved_data["smoothing"].toDouble();
    at::Tensor grad_input;
    if (at::GradMode::is_enabled()) {
      grad_input = differentiable_grad(x, target, weight, grads[0], total, reduction, ignore_index,
                                       smoothing);
    } else {
      auto w = weight.defined() ? std::optional<at::Tensor>(weight) : std::nullopt;
      grad_input =
          call_backward(grads[0], x, target, w, lse, total, reduction, ignore_index, smoothing);
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
  return reduction == at::Reduction::None ? out.reshape_symint(target.sym_sizes()) : out;
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
        auto w_arg = w.defined() ? std::optional<at::Tensor>(w) : std::nullopt;
        return std::get<0>(call_forward(scores, t, w_arg, reduction, ignore, smoothing));
      });
}

}  // namespace

// The vkml namespace is library.cpp's; these ops are a fragment of it.
TORCH_LIBRARY_FRAGMENT(vkml, m) {
  m.def(
      "cross_entropy_forward(Tensor scores, Tensor target, Tensor? weight, int reduction, "
      "int ignore_index, float label_smoothing) -> (Tensor output, Tensor lse, "
      "Tensor total_weight)",
      {at::Tag::pt2_compliant_tag});
  m.def(
      "cross_entropy_backward(Tensor grad, Tensor scores, Tensor target, Tensor? weight, "
      "Tensor lse, Tensor total_weight, int reduction, int ignore_index, "
      "float label_smoothing) -> Tensor",
      {at::Tag::pt2_compliant_tag});
}

TORCH_LIBRARY_IMPL(vkml, PrivateUse1, m) {
  m.impl("cross_entropy_forward", TORCH_FN(forward_vkml));
  m.impl("cross_entropy_backward", TORCH_FN(backward_vkml));
}

TORCH_LIBRARY_IMPL(vkml, Meta, m) {
  m.impl("cross_entropy_forward", TORCH_FN(forward_meta));
  m.impl("cross_entropy_backward", TORCH_FN(backward_meta));
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("cross_entropy_loss", TORCH_FN(cross_entropy_autograd));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cross_entropy_loss", TORCH_FN(cross_entropy_no_grad));
}

}  // namespace vkml_aten
