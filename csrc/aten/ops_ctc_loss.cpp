// _ctc_loss and _ctc_loss_backward, with lengths as int lists (what F.ctc_loss reaches
// through ATen's composite ctc_loss, which also reduces) or as tensors. The checks are
// ATen CPU's, on the host values of the lengths; the recursions run on the device.
#include <ATen/TensorUtils.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/ctc_loss.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

void check_dtype(const at::Tensor& log_probs, const char* op) {
  // ATen dispatches CTC over float and double only.
  TORCH_CHECK_NOT_IMPLEMENTED(
      log_probs.scalar_type() == at::kFloat || log_probs.scalar_type() == at::kDouble, "\"", op,
      "\" not implemented for '", toString(log_probs.scalar_type()), "'");
}

// What both directions pass to the kernels, with the tensors that back it.
struct Prepared {
  vkml::ops::CtcLossArgs args;
  at::Tensor targets, lengths;
};

// The per-sample lengths and target offsets, uploaded as one int64 [n, 3] tensor.
// max_target_length: forward computes it (log_alpha's size follows), backward takes
// it from log_alpha.
Prepared prepare(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef il,
                 at::IntArrayRef tl, int64_t blank, int64_t max_target_length) {
  const int64_t n = log_probs.size(1);
  std::vector<int64_t> host(size_t(3 * n));
  int64_t pos = 0;
  for (int64_t b = 0; b < n; ++b) {
    host[3 * b] = il[b];
    host[3 * b + 1] = tl[b];
    host[3 * b + 2] = targets.dim() == 1 ? pos : b * targets.size(1);
    pos += tl[b];
  }
  Prepared p;
  p.targets = targets.to(log_probs.device(), at::kLong).contiguous();
  p.lengths = at::tensor(host, at::TensorOptions().dtype(at::kLong)).to(log_probs.device());
  auto& a = p.args;
  a.dtype = to_vkml(log_probs.scalar_type());
  a.log_probs = addr(log_probs);
  for (int d = 0; d < 3; ++d) a.lp_strides[d] = log_probs.stride(d);
  a.targets = addr(p.targets);
  a.targets_numel = p.targets.numel();
  a.lengths = addr(p.lengths);
  a.t = log_probs.size(0);
  a.n = n;
  a.c = log_probs.size(2);
  a.max_target_length = max_target_length;
  a.blank = blank;
  return p;
}

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef il, at::IntArrayRef tl, int64_t blank,
                                            bool zero_infinity) {
  check_dtype(log_probs, "ctc_loss_cpu");
  if (float64_without_arithmetic(log_probs)) {
    return cpu_route<at::_ops::_ctc_loss>(log_probs, targets, il, tl, blank, zero_infinity);
  }
  // ATen's checks (ctc_loss_allocate_outputs), with its messages.
  at::CheckedFrom c = "ctc_loss_allocate_outputs";
  auto log_probs_arg = at::TensorArg(log_probs, "log_probs", 1);
  auto targets_arg = at::TensorArg(targets, "targets", 2);
  at::checkScalarType(c, targets_arg, targets.scalar_type() == at::kLong ? at::kLong : at::kInt);
  at::checkDim(c, log_probs_arg, 3);
  at::checkDimRange(c, targets_arg, 1, 3);
  const int64_t n = log_probs.size(1), labels = log_probs.size(2);
  TORCH_CHECK(0 <= blank && blank < labels, "blank must be in label range");
  TORCH_CHECK(int64_t(il.size()) == n, "input_lengths must be of size batch_size");
  TORCH_CHECK(int64_t(tl.size()) == n, "target_lengths must be of size batch_size");
  int64_t max_target_length = 0, total = 0;
  for (int64_t b = 0; b < n; ++b) {
    TORCH_CHECK(tl[b] >= 0, "Expected target_lengths to have value at least ", 0,
                ", but got value ", tl[b], " (while checking arguments for ", c, ")");
    max_target_length = std::max(max_target_length, tl[b]);
    total += tl[b];
  }
  if (targets.dim() == 1) {
    at::checkSize(c, targets_arg, 0, total);
  } else {
    at::checkSize(c, targets_arg, 0, n);
    TORCH_CHECK(targets.size(1) >= max_target_length, "Expected tensor to have size at least ",
                max_target_length, " at dimension 1, but got size ", targets.size(1), " for ",
                targets_arg, " (while checking arguments for ", c, ")");
  }
  const int64_t max_input_length = log_probs.size(0);
  for (int64_t b = 0; b < n; ++b) {
    TORCH_CHECK(il[b] >= 0, "Expected input_lengths to have value at least ", 0, ", but got value ",
                il[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(il[b] <= max_input_length, "Expected input_lengths to have value at most ",
                max_input_length, ", but got value ", il[b], " (while checking arguments for ", c,
                ")");
  }

  at::Tensor log_alpha =
      at::empty({n, log_probs.size(0), 2 * max_target_length + 1}, log_probs.options());
  at::Tensor nll = at::empty({n}, log_probs.options());
  Prepared p = prepare(log_probs, targets, il, tl, blank, max_target_length);
  p.args.log_alpha = addr(log_alpha);
  p.args.nll = addr(nll);
  guarded([&] { vkml::ops::ctc_loss_forward(vkml_device(log_probs), p.args); });
  return {nll, log_alpha};
}

// Lengths given as tensors are needed on the host (the checks, the target offsets): a
// vkml tensor is read back, which waits for the device, as ATen does for CUDA tensors.
std::vector<int64_t> host_lengths(const at::Tensor& lengths, const char* name) {
  TORCH_CHECK(at::isIntegralType(lengths.scalar_type(), /*includeBool=*/false), name,
              " must be integral");
  at::Tensor h = lengths.to(at::kCPU, at::kLong).contiguous();
  return {h.data_ptr<int64_t>(), h.data_ptr<int64_t>() + h.numel()};
}

std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor(const at::Tensor& log_probs,
                                                   const at::Tensor& targets,
                                                   const at::Tensor& input_lengths,
                                                   const at::Tensor& target_lengths, int64_t blank,
                                                   bool zero_infinity) {
  auto il = host_lengths(input_lengths, "input_lengths");
  auto tl = host_lengths(target_lengths, "target_lengths");
  return ctc_loss(log_probs, targets, il, tl, blank, zero_infinity);
}

at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs,
                             const at::Tensor& targets, at::IntArrayRef il, at::IntArrayRef tl,
                             const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha,
                             int64_t blank, bool zero_infinity) {
  check_dtype(log_probs, "ctc_loss_backward_cpu");
  if (float64_without_arithmetic(log_probs)) {
    return cpu_route<at::_ops::_ctc_loss_backward>(
        grad, log_probs, targets, il, tl, neg_log_likelihood, log_alpha, blank, zero_infinity);
  }
  // ATen's backward trusts its forward's checks; these keep a direct call from reading
  // out of bounds on the device.
  TORCH_CHECK(log_probs.dim() == 3 && log_alpha.dim() == 3, "ctc_loss_backward: bad shapes");
  const int64_t n = log_probs.size(1), t = log_probs.size(0);
  const int64_t max_target_length = (log_alpha.size(2) - 1) / 2;
  TORCH_CHECK(log_alpha.size(0) == n && log_alpha.size(1) == t && log_alpha.size(2) % 2 == 1,
              "ctc_loss_backward: log_alpha does not match log_probs");
  TORCH_CHECK(int64_t(il.size()) == n && int64_t(tl.size()) == n &&
                  neg_log_likelihood.numel() == n && grad.numel() == n,
              "ctc_loss_backward: expected ", n, " lengths, losses and gradients");
  TORCH_CHECK(0 <= blank && blank < log_probs.size(2), "blank must be in label range");
  int64_t total = 0;
  for (int64_t b = 0; b < n; ++b) {
    TORCH_CHECK(il[b] >= 0 && il[b] <= t && tl[b] >= 0 && tl[b] <= max_target_length,
                "ctc_loss_backward: lengths out of range");
    total += tl[b];
  }
  TORCH_CHECK(targets.dim() == 1 ? targets.size(0) >= total
                                 : targets.dim() == 2 && targets.size(0) == n &&
                                       targets.size(1) >= max_target_length,
              "ctc_loss_backward: targets too short for target_lengths");

  const auto options = log_probs.options();
  at::Tensor result = at::empty(log_probs.sizes(), options);  // contiguous, as ATen's
  if (result.numel() == 0) return result;
  at::Tensor alpha = log_alpha.to(options.dtype()).contiguous();
  at::Tensor nll = neg_log_likelihood.to(options.dtype()).contiguous();
  at::Tensor g = grad.to(options.dtype()).reshape({n});
  Prepared p = prepare(log_probs, targets, il, tl, blank, max_target_length);
  p.args.log_alpha = addr(alpha);
  p.args.nll = addr(nll);
  at::Tensor scratch = at::empty({int64_t(vkml::ops::ctc_loss_backward_scratch_bytes(p.args))},
                                 options.dtype(at::kByte));
  guarded([&] {
    vkml::ops::ctc_loss_backward(vkml_device(log_probs), p.args, addr(g), g.stride(0),
                                 zero_infinity, addr(scratch), addr(result));
  });
  return result;
}

at::Tensor ctc_loss_backward_tensor(const at::Tensor& grad, const at::Tensor& log_probs,
                                    const at::Tensor& targets, const at::Tensor& input_lengths,
                                    const at::Tensor& target_lengths,
                                    const at::Tensor& neg_log_likelihood,
                                    const at::Tensor& log_alpha, int64_t blank,
                                    bool zero_infinity) {
  auto il = host_lengths(input_lengths, "input_lengths");
  auto tl = host_lengths(target_lengths, "target_lengths");
  return ctc_loss_backward(grad, log_probs, targets, il, tl, neg_log_likelihood, log_alpha, blank,
                           zero_infinity);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_ctc_loss", TORCH_FN(ctc_loss));
  m.impl("_ctc_loss.Tensor", TORCH_FN(ctc_loss_tensor));
  m.impl("_ctc_loss_backward", TORCH_FN(ctc_loss_backward));
  m.impl("_ctc_loss_backward.Tensor", TORCH_FN(ctc_loss_backward_tensor));
}

}  // namespace vkml_aten
