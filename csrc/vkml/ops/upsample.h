#pragma once
// Bilinear 2-D upsampling (PyTorch's CPU index rules) and its backward pass.
// Nearest-neighbour resampling is a gather: see remap.h.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct BilinearShape {
  int64_t planes = 1, ih = 1, iw = 1, oh = 1, ow = 1;
  float scale_h = 1, scale_w = 1;  // source step per output step (area_pixel_compute_scale)
  bool align_corners = false;
};

// in/out contiguous [planes, ih, iw] / [planes, oh, ow]; dtype f32 or f16.
void upsample_bilinear(Device& dev, DType dtype, uint64_t in, uint64_t out,
                       const BilinearShape& s);
// grad_in (float32, zeroed, [planes, ih, iw]) += adjoint of grad_out (float32).
void upsample_bilinear_backward(Device& dev, uint64_t grad_out, uint64_t grad_in,
                                const BilinearShape& s);

}  // namespace vkml::ops
