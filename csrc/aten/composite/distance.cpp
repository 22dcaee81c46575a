// Pairwise p-norm distances (cdist, pdist) and their backward from native
// elementwise ops and reductions over the difference tensor, with the CPU
// kernels' special cases for p = 0, 1, 2, inf and zero distances.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <vector>

#include "aten/op_helpers.h"

namespace vkml_aten {
namespace {

// ||diff||_p over the last dim.
at::Tensor norm_last(const at::Tensor& diff, double p) {
  if (p == 0) return diff.ne(0).to(diff.scalar_type()).sum(-1);
  if (p == 1) return diff.abs().sum(-1);
  if (p == 2) return (diff * diff).sum(-1).sqrt();
  if (std::isinf(p)) {
    if (diff.size(-1) == 0) return diff.abs().sum(-1);  // no elements: 0
    return diff.abs().amax(-1);
  }
  return diff.abs().pow(p).sum(-1).pow(1.0 / p);
}

// d ||diff||_p / d diff times grad, elementwise; dist and grad broadcast over
// the last dim. Zero distances give zero gradients.
at::Tensor norm_grad(const at::Tensor& diff, const at::Tensor& dist, const at::Tensor& grad,
                     double p) {
  if (p == 0) return at::zeros_like(diff);
  if (p == 1) return diff.sign() * grad;
  at::Tensor zero = at::zeros({}, diff.options());
  at::Tensor dead = dist == 0;
  if (std::isinf(p)) return diff.sign() * grad * (diff.abs() == dist).to(diff.scalar_type());
  if (p == 2) return at::where(dead, zero, diff * grad / dist);
  if (p < 2) {
    at::Tensor r = diff.sign() * diff.abs().pow(p - 1) * grad / dist.pow(p - 1);
    if (p < 1) dead = dead | (diff == 0);
    return at::where(dead, zero, r);
  }
  return at::where(dead, zero, diff * diff.abs().pow(p - 2) * grad / dist.pow(p - 1));
}

void check_p(const char* op, double p) {
  TORCH_CHECK(p >= 0, op, " only supports non-negative p values");
}

void check_cdist_dtype(const char* op, const at::Tensor& t) {
  TORCH_CHECK(at::isFloatingType(t.scalar_type()), op,
              " only supports floating-point dtypes, X1 got: ", t.scalar_type());
}

// x1 [..., P, M], x2 [..., R, M] -> the differences [..., P, R, M], batch dims broadcast.
at::Tensor pair_diff(const at::Tensor& x1, const at::Tensor& x2) {
  return x1.unsqueeze(-2) - x2.unsqueeze(-3);
}

void check_cdist(const at::Tensor& x1, const at::Tensor& x2, double p) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1),
              "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  check_cdist_dtype("cdist", x1);
  check_p("cdist", p);
}

at::Tensor vk_cdist(const at::Tensor& x1, const at::Tensor& x2, double p,
                    std::optional<int64_t> /*compute_mode: one algorithm here*/) {
  check_cdist(x1, x2, p);
  return norm_last(pair_diff(x1, x2), p);
}
at::Tensor& cdist_out(const at::Tensor& x1, const at::Tensor& x2, double p,
                      std::optional<int64_t> mode, at::Tensor& out) {
  return write_out(out, vk_cdist(x1, x2, p, mode));
}

// The gradient for x1 (autograd swaps the arguments for x2).
at::Tensor vk_cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2,
                             double p, const at::Tensor& cdist) {
  check_cdist(x1, x2, p);
  at::Tensor diff = pair_diff(x1, x2);
  at::Tensor g = norm_grad(diff, cdist.unsqueeze(-1), grad.unsqueeze(-1), p).sum(-2);
  // Batch dims that x1 broadcast over sum back to its shape.
  return at::sum_to(g, x1.sizes()).contiguous();
}
at::Tensor& cdist_backward_out(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2,
                               double p, const at::Tensor& cdist, at::Tensor& out) {
  return write_out(out, vk_cdist_backward(grad, x1, x2, p, cdist));
}

// The (i, j), i < j, row pairs of an n-row matrix in pdist's order, on the device.
std::pair<at::Tensor, at::Tensor> upper_pairs(int64_t n, const at::Device& device) {
  std::vector<int64_t> is, js;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      is.push_back(i);
      js.push_back(j);
    }
  auto opts = at::TensorOptions().dtype(at::kLong);
  at::Tensor i = at::tensor(is, opts).to(device), j = at::tensor(js, opts).to(device);
  return {i, j};
}

void check_pdist(const at::Tensor& self, double p) {
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  check_cdist_dtype("pdist", self);
  check_p("pdist", p);
}

at::Tensor vk_pdist(const at::Tensor& self, double p) {
  check_pdist(self, p);
  int64_t n = self.size(0);
  if (n <= 1) return at::empty({0}, self.options());
  auto [i, j] = upper_pairs(n, self.device());
  return norm_last(self.index_select(0, i) - self.index_select(0, j), p);
}
at::Tensor& pdist_out(const at::Tensor& self, double p, at::Tensor& out) {
  return write_out(out, vk_pdist(self, p));
}

at::Tensor vk_pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p,
                             const at::Tensor& pdist) {
  check_pdist(self, p);
  at::Tensor out = at::zeros(self.sizes(), self.options());
  int64_t n = self.size(0);
  if (n <= 1 || self.size(1) == 0) return out;
  auto [i, j] = upper_pairs(n, self.device());
  at::Tensor diff = self.index_select(0, i) - self.index_select(0, j);
  at::Tensor g = norm_grad(diff, pdist.unsqueeze(-1), grad.unsqueeze(-1), p);
  out.index_add_(0, i, g);
  out.index_add_(0, j, -g);
  return out;
}
at::Tensor& pdist_backward_out(const at::Tensor& grad, const at::Tensor& self, double p,
                               const at::Tensor& pdist, at::Tensor& out) {
  return write_out(out, vk_pdist_backward(grad, self, p, pdist));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cdist_forward", TORCH_FN(vk_cdist));
  m.impl("_cdist_forward.out", TORCH_FN(cdist_out));
  m.impl("_cdist_backward", TORCH_FN(vk_cdist_backward));
  m.impl("_cdist_backward.out", TORCH_FN(cdist_backward_out));
  m.impl("_pdist_forward", TORCH_FN(vk_pdist));
  m.impl("_pdist_forward.out", TORCH_FN(pdist_out));
  m.impl("_pdist_backward", TORCH_FN(vk_pdist_backward));
  m.impl("_pdist_backward.out", TORCH_FN(pdist_backward_out));
}

}  // namespace vkml_aten
