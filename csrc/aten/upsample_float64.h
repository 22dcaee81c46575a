#pragma once
// Linear, bicubic and antialiased resampling of float64 tensors (interp.comp computes in
// float32): each separable pass is a product with its [out, in] weight matrix, built on
// the host in double by the CPU kernels' index and weight rules (at most four taps a
// row, or the antialias filter's support), so it runs on vkml's float64 matrix product;
// a pass's backward multiplies by the transpose. ops_upsample.cpp takes these where the
// device has float64 arithmetic and each matrix stays within 4M entries.
#include <ATen/ATen.h>

#include "vkml/ops/upsample.h"

namespace vkml_aten::upsample_f64 {

// x resampled along `dim` to `out` samples; `scale` is the source step per output step
// (area_pixel_compute_scale, in double).
at::Tensor pass(const at::Tensor& x, int64_t dim, int64_t out, vkml::ops::InterpMode mode,
                bool align_corners, double scale);

// The adjoint: g [.., out, ..] along `dim` back to `in` samples.
at::Tensor pass_backward(const at::Tensor& g, int64_t dim, int64_t in, vkml::ops::InterpMode mode,
                         bool align_corners, double scale);

}  // namespace vkml_aten::upsample_f64
