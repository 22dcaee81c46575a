#pragma once
// nll_loss of float64 log-probabilities, forward and backward, composed of vkml's float64
// kernels (the nll_loss kernel computes in fp32). ops_loss.cpp checks the arguments and
// takes these where the device has float64 arithmetic.
#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace vkml_aten::nll_f64 {

// As nll_loss_forward: the loss and the total weight of the counted targets.
std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& self, const at::Tensor& target,
                                           const std::optional<at::Tensor>& weight,
                                           int64_t reduction, int64_t ignore_index);

// As nll_loss_backward: the gradient of the input.
at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                    const std::optional<at::Tensor>& weight, int64_t reduction,
                    int64_t ignore_index, const at::Tensor& total_weight);

}  // namespace vkml_aten::nll_f64
