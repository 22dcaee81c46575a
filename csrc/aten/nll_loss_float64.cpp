#include "nll_loss_float64.h"

#include <ATen/core/Reduction.h>

#include "op_helpers.h"
#include "vkml/ops/value_check.h"
#include "vkml/shaders/device_error.h"
#include "vkml_tensor.h"

namespace vkml_aten::nll_f64 {
namespace {

// The input as [n, c] rows, each row's target (ignored ones as 0), whether it counts
// (not ignored), and its weight: the class weight, or 1, and 0 where it is ignored.
struct Rows {
  at::Tensor x, target, counted, weight;
};

Rows nll_rows_of(const at::Tensor& self, const at::Tensor& target,
                 const std::optional<at::Tensor>& weight, int64_t ignore_index) {
  at::Tensor x = self.dim() == 1 ? self.unsqueeze(0) : self;
  at::Tensor t = target.to(at::kLong).reshape({-1});
  at::Tensor counted = t.ne(ignore_index);
  at::Tensor safe = at::where(counted, t, 0).contiguous();
  // As the kernel: a target outside [0, c) raises IndexError at the next read.
  guarded([&] {
    vkml::ops::check_int_range(vkml_device(safe), ref(safe), 0, x.size(1) - 1, DEVICE_ERROR_TARGET,
                               DEVICE_ERROR_TARGET);
  });
  at::Tensor w = counted.to(self.scalar_type());
  if (given(weight)) w = w * weight->to(self.scalar_type()).index_select(0, safe);
  return {x, safe, counted, w};
}

// One element per row (reduction none of a batch), or a scalar.
bool per_row(const at::Tensor& self, int64_t reduction) {
  return reduction == at::Reduction::None && self.dim() == 2;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& self, const at::Tensor& target,
                                           const std::optional<at::Tensor>& weight,
                                           int64_t reduction, int64_t ignore_index) {
  Rows r = nll_rows_of(self, target, weight, ignore_index);
  at::Tensor losses = r.x.gather(1, r.target.unsqueeze(1)).squeeze(1).neg_().mul_(r.weight);
  if (per_row(self, reduction)) return {losses, at::zeros({}, self.options())};
  at::Tensor total = r.weight.sum();
  at::Tensor sum = losses.sum();
  return {reduction == at::Reduction::Mean ? sum / total : sum, total};
}

at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                    const std::optional<at::Tensor>& weight, int64_t reduction,
                    int64_t ignore_index, const at::Tensor& total_weight) {
  Rows r = nll_rows_of(self, target, weight, ignore_index);
  at::Tensor g = grad_output.to(self.scalar_type());
  if (reduction == at::Reduction::Mean && !per_row(self, reduction))
    g = g / total_weight.to(g.scalar_type());
  // Ignored rows get 0 even where g is infinite (every target ignored: total weight 0),
  // as the CPU skips them; a counted row of weight 0 gives 0 * inf = NaN there, as there.
  at::Tensor value = at::where(r.counted, (r.weight * g).neg_(), 0).unsqueeze(1);
  return at::zeros(r.x.sizes(), self.options())
      .scatter_(1, r.target.unsqueeze(1), value)
      .view(self.sizes());
}

}  // namespace vkml_aten::nll_f64
