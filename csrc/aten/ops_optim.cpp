// Fused optimizer steps (torch.optim.Adam/AdamW/SGD/Adagrad with fused=True): one
// kernel launch per dtype updates the whole parameter list (float64 in double).
#include <torch/library.h>

#include <map>
#include <optional>
#include <type_traits>
#include <vector>

#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/optim.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::OptimParam;
using vkml::ops::OptimRule;

// Companion tensors (grads, state) must walk memory in the param's order. A
// companion with another layout is updated through a copy in the param's
// layout, written back after the step.
struct Aligned {
  std::vector<std::pair<at::Tensor, at::Tensor>> write_back;  // (user tensor, copy)

  uint64_t operator()(const char* op, const char* what, const at::Tensor& param,
                      const at::Tensor& t) {
    TORCH_CHECK(t.device() == param.device(), op, ": ", what, " is on ", t.device(),
                " but the parameter is on ", param.device());
    TORCH_CHECK(t.scalar_type() == param.scalar_type(), op, ": ", what, " has dtype ",
                t.scalar_type(), " but the parameter has ", param.scalar_type());
    TORCH_CHECK(t.sizes() == param.sizes(), op, ": ", what, " has shape ", t.sizes(),
                " but the parameter has ", param.sizes());
    if (t.strides() == param.strides()) return addr(t);
    at::Tensor copy = at::empty_strided(param.sizes(), param.strides(), param.options());
    copy.copy_(t);
    write_back.emplace_back(t, copy);
    return addr(copy);
  }
  void finish() {
    for (auto& [user, copy] : write_back) user.copy_(copy);
  }
};

uint64_t scalar_addr(const char* op, const char* what, const std::optional<at::Tensor>& t,
                     const at::Tensor& param) {
  if (!t || !t->defined()) return 0;
  TORCH_CHECK(t->device() == param.device(), op, ": ", what, " must be on ", param.device(),
              ", got ", t->device());
  TORCH_CHECK(t->scalar_type() == at::kFloat && t->numel() >= 1, op, ": ", what,
              " must be a float32 tensor with one element, got ", t->scalar_type(), " of shape ",
              t->sizes());
  return addr(*t);
}

struct Lists {
  at::TensorList params, grads, state0, state1, state2, steps;
};

void run(const char* op, OptimRule rule, const Lists& l, vkml::ops::OptimHyper h,
         const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf,
         const std::optional<at::Tensor>& lr_tensor) {
  const size_t n = l.params.size();
  bool adam = rule == OptimRule::adam || rule == OptimRule::adamw;
  TORCH_CHECK(l.grads.size() == n, op, ": got ", n, " parameters but ", l.grads.size(), " grads");
  if (rule == OptimRule::adagrad) {
    TORCH_CHECK(l.state0.size() == n && l.steps.size() == n, op,
                ": state_sums and state_steps must have one tensor per parameter");
  } else if (adam) {
    TORCH_CHECK(l.state0.size() == n && l.state1.size() == n && l.steps.size() == n, op,
                ": exp_avgs, exp_avg_sqs and state_steps must have one tensor per parameter");
    TORCH_CHECK(!h.amsgrad || l.state2.size() == n, op,
                ": amsgrad needs one max_exp_avg_sq per parameter");
  } else {
    TORCH_CHECK(l.state0.empty() || l.state0.size() == n, op,
                ": momentum_buffer_list must be empty or have one tensor per parameter");
  }
  if (n == 0) return;
  const at::Tensor& first = l.params[0];
  TORCH_CHECK(first.device().type() == c10::DeviceType::PrivateUse1, op,
              ": parameters must be on vkml, got ", first.device());
  std::optional<at::Tensor> lr_keep;
  if (lr_tensor && lr_tensor->defined()) {
    TORCH_CHECK(lr_tensor->numel() == 1, op, ": lr must be a one-element tensor");
    if (lr_tensor->device().is_cpu()) {
      h.lr = lr_tensor->item<double>();
    } else {
      // In the parameters' precision: float64 for float64 parameters, else float32.
      const bool f64 = first.scalar_type() == at::kDouble;
      lr_keep = lr_tensor->to(first.device(), f64 ? at::kDouble : at::kFloat).contiguous();
      h.lr_tensor = f64 ? addr(*lr_keep) : scalar_addr(op, "lr", lr_keep, first);
    }
  }
  h.grad_scale = scalar_addr(op, "grad_scale", grad_scale, first);
  h.found_inf = scalar_addr(op, "found_inf", found_inf, first);

  Aligned align;
  std::map<at::ScalarType, std::vector<OptimParam>> groups;
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor& p = l.params[i];
    TORCH_CHECK(p.device() == first.device(), op, ": all parameters must be on one device, got ",
                p.device(), " and ", first.device());
    TORCH_CHECK(p.is_non_overlapping_and_dense(), op,
                ": parameters must be dense (no overlapping or strided views)");
    at::ScalarType t = p.scalar_type();
    TORCH_CHECK(t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble, op,
                " on vkml supports float32, float16, bfloat16 and float64 parameters, got ", t);
    OptimParam r;
    r.param = addr(p);
    r.numel = p.numel();
    r.grad = align(op, "grad", p, l.grads[i]);
    if (adam || rule == OptimRule::adagrad) {
      if (adam) {
        r.state0 = align(op, "exp_avg", p, l.state0[i]);
        r.state1 = align(op, "exp_avg_sq", p, l.state1[i]);
        if (h.amsgrad) r.state2 = align(op, "max_exp_avg_sq", p, l.state2[i]);
      } else {
        r.state0 = align(op, "state_sum", p, l.state0[i]);
      }
      const at::Tensor& s = l.steps[i];
      TORCH_CHECK(s.device() == p.device() && s.scalar_type() == at::kFloat && s.numel() == 1, op,
                  ": state_steps must be float32 one-element tensors on ", p.device(), ", got ",
                  s.scalar_type(), " on ", s.device());
      r.step = addr(s);
    } else if (!l.state0.empty()) {
      r.state0 = align(op, "momentum_buffer", p, l.state0[i]);
    }
    groups[t].push_back(r);
  }
  guarded([&] {
    for (auto& [t, params] : groups)
      vkml::ops::fused_optimizer_step(vkml_device(first), rule, to_vkml(t), params, h);
  });
  align.finish();
}

// float64 parameters on a device without float64 arithmetic: the CPU's fused step, on
// the counted route (the kernel's f64 variant computes in double elsewhere).
bool on_cpu_route(at::TensorList params) {
  return !params.empty() && float64_without_arithmetic(params[0]);
}

// The learning rate of the scalar overloads, or of the .tensor_lr ones: a one-element
// tensor the kernel reads on the device (its value here is a placeholder).
double lr_value(double lr) { return lr; }
double lr_value(const at::Tensor&) { return 0; }
std::optional<at::Tensor> lr_tensor(double) { return std::nullopt; }
std::optional<at::Tensor> lr_tensor(const at::Tensor& lr) { return lr; }

// Lr: double, or const at::Tensor& for the .tensor_lr overload.
template <OptimRule Rule, class Lr>
void fused_adam(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                at::TensorList state_steps, Lr lr, double beta1, double beta2, double weight_decay,
                double eps, bool amsgrad, bool maximize,
                const std::optional<at::Tensor>& grad_scale,
                const std::optional<at::Tensor>& found_inf) {
  const char* op = Rule == OptimRule::adamw ? "_fused_adamw_" : "_fused_adam_";
  if (on_cpu_route(self)) {  // float64: the CPU's fused step, counted
    constexpr bool scalar_lr = std::is_same_v<Lr, double>;
    using Adam =
        std::conditional_t<scalar_lr, at::_ops::_fused_adam_, at::_ops::_fused_adam__tensor_lr>;
    using AdamW =
        std::conditional_t<scalar_lr, at::_ops::_fused_adamw_, at::_ops::_fused_adamw__tensor_lr>;
    using Op = std::conditional_t<Rule == OptimRule::adamw, AdamW, Adam>;
    return cpu_route<Op>(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
                         beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
  }
  run(op, Rule, {self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps},
      {.lr = lr_value(lr),
       .beta1 = beta1,
       .beta2 = beta2,
       .weight_decay = weight_decay,
       .eps = eps,
       .amsgrad = amsgrad,
       .maximize = maximize},
      grad_scale, found_inf, lr_tensor(lr));
}

template <class Lr>
void fused_sgd(at::TensorList self, at::TensorList grads, at::TensorList momentum_buffers,
               double weight_decay, double momentum, Lr lr, double dampening, bool nesterov,
               bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
               const std::optional<at::Tensor>& found_inf) {
  if (on_cpu_route(self)) {
    using Op = std::conditional_t<std::is_same_v<Lr, double>, at::_ops::_fused_sgd_,
                                  at::_ops::_fused_sgd__tensor_lr>;
    return cpu_route<Op>(self, grads, momentum_buffers, weight_decay, momentum, lr, dampening,
                         nesterov, maximize, is_first_step, grad_scale, found_inf);
  }
  // Without momentum PyTorch passes no buffers; with momentum 0 any given are unused.
  at::TensorList buffers = momentum != 0 ? momentum_buffers : at::TensorList{};
  run("_fused_sgd_", OptimRule::sgd, {self, grads, buffers, {}, {}, {}},
      {.lr = lr_value(lr),
       .beta1 = momentum,
       .beta2 = dampening,
       .weight_decay = weight_decay,
       .maximize = maximize,
       .nesterov = nesterov,
       .first_step = is_first_step},
      grad_scale, found_inf, lr_tensor(lr));
}

template <class Lr>
void fused_adagrad(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                   at::TensorList state_steps, Lr lr, double lr_decay, double weight_decay,
                   double eps, bool maximize, const std::optional<at::Tensor>& grad_scale,
                   const std::optional<at::Tensor>& found_inf) {
  if (on_cpu_route(self)) {
    using Op = std::conditional_t<std::is_same_v<Lr, double>, at::_ops::_fused_adagrad_,
                                  at::_ops::_fused_adagrad__tensor_lr>;
    return cpu_route<Op>(self, grads, state_sums, state_steps, lr, lr_decay, weight_decay, eps,
                         maximize, grad_scale, found_inf);
  }
  run("_fused_adagrad_", OptimRule::adagrad, {self, grads, state_sums, {}, {}, state_steps},
      {.lr = lr_value(lr),
       .beta1 = lr_decay,
       .weight_decay = weight_decay,
       .eps = eps,
       .maximize = maximize},
      grad_scale, found_inf, lr_tensor(lr));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using T = const at::Tensor&;
  m.impl("_fused_adam_", TORCH_FN((fused_adam<OptimRule::adam, double>)));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN((fused_adam<OptimRule::adam, T>)));
  m.impl("_fused_adamw_", TORCH_FN((fused_adam<OptimRule::adamw, double>)));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN((fused_adam<OptimRule::adamw, T>)));
  m.impl("_fused_sgd_", TORCH_FN(fused_sgd<double>));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN(fused_sgd<T>));
  m.impl("_fused_adagrad_", TORCH_FN(fused_adagrad<double>));
  m.impl("_fused_adagrad_.tensor_lr", TORCH_FN(fused_adagrad<T>));
}

}  // namespace vkml_aten
