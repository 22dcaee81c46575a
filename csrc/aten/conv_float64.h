#pragma once
// Convolution of float64 tensors (1-3 spatial dims, groups, strides, padding, dilation),
// composed of vkml's float64 kernels: the windows gathered into columns by one strided
// copy, a batched float64 matrix product per group, and for the data gradient the
// columns added back window offset by window offset. The conv kernels compute in fp32;
// ops_conv.cpp takes these where the device has float64 arithmetic, with the shapes of
// its kernels' view (ConvShape: x side, y side; a transposed convolution swaps them).
#include <ATen/ATen.h>

#include "vkml/ops/conv.h"

namespace vkml_aten::conv_f64 {

// y [N, co, out...] = conv(x [N, ci, in...], w [co, ci / groups, k...]) + bias [co]
// (bias undefined: none).
at::Tensor forward(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                   const vkml::ops::ConvShape& s);

// gx [N, ci, in...] from gy [N, co, out...]: the transposed convolution, + bias [ci].
at::Tensor data_grad(const at::Tensor& gy, const at::Tensor& w, const at::Tensor& bias,
                     const vkml::ops::ConvShape& s);

// gw [co, ci / groups, k...] from x [N, ci, in...] and gy [N, co, out...].
at::Tensor weight_grad(const at::Tensor& x, const at::Tensor& gy, const vkml::ops::ConvShape& s);

}  // namespace vkml_aten::conv_f64
