#pragma once
// Batch, layer and group norm of float64 tensors, forward and backward, composed of vkml's
// float64 reductions and elementwise kernels (norm.comp computes in fp32). ops_norm.cpp
// takes these where the device has float64 arithmetic; arguments are checked there.
#include <ATen/ATen.h>

#include <array>
#include <optional>
#include <tuple>

namespace vkml_aten::norm_f64 {

using Tensor3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using OptTensor = std::optional<at::Tensor>;

// As native_batch_norm: y, and the batch's mean and 1 / sqrt(var + eps) when training
// (empty tensors otherwise); running statistics updated in place when training.
Tensor3 batch_norm(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                   const OptTensor& running_mean, const OptTensor& running_var, bool training,
                   double momentum, double eps);
Tensor3 batch_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            const OptTensor& weight, const OptTensor& running_mean,
                            const OptTensor& running_var, const OptTensor& save_mean,
                            const OptTensor& save_invstd, bool train, double eps,
                            std::array<bool, 3> mask);

// As native_layer_norm: statistics over the trailing normalized_shape.
Tensor3 layer_norm(const at::Tensor& input, at::IntArrayRef normalized_shape,
                   const OptTensor& weight, const OptTensor& bias, double eps);
Tensor3 layer_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            at::IntArrayRef normalized_shape, const at::Tensor& mean,
                            const at::Tensor& rstd, const OptTensor& weight,
                            std::array<bool, 3> mask);

// As native_group_norm: statistics per (sample, group); y contiguous.
Tensor3 group_norm(const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
                   int64_t N, int64_t C, int64_t HxW, int64_t group, double eps);
Tensor3 group_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            const at::Tensor& mean, const at::Tensor& rstd, const OptTensor& weight,
                            int64_t N, int64_t C, int64_t HxW, int64_t group,
                            std::array<bool, 3> mask);

}  // namespace vkml_aten::norm_f64
