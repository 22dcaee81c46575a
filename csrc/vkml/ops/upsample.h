#pragma once
// Bilinear 2-D upsampling (PyTorch's CPU index rules) and its backward pass, and
// separable 1-D passes for linear / trilinear, bicubic and antialiased resampling.
// Nearest-neighbour resampling is a gather: see remap.h.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/interp_push.h"

namespace vkml::ops {

struct BilinearShape {
  int64_t planes = 1, ih = 1, iw = 1, oh = 1, ow = 1;
  float scale_h = 1, scale_w = 1;  // source step per output step (area_pixel_compute_scale)
  bool align_corners = false;
};

// in/out contiguous [planes, ih, iw] / [planes, oh, ow]; dtype f32 or f16.
void upsample_bilinear(Device& dev, DType dtype, uint64_t in, uint64_t out, const BilinearShape& s);
// grad_in (float32, zeroed, [planes, ih, iw]) += adjoint of grad_out (float32).
void upsample_bilinear_backward(Device& dev, uint64_t grad_out, uint64_t grad_in,
                                const BilinearShape& s);

enum class InterpMode {
  Linear = INTERP_LINEAR,
  Cubic = INTERP_CUBIC,
  AaLinear = INTERP_AA_LINEAR,
  AaCubic = INTERP_AA_CUBIC
};

// One pass along the middle dim of contiguous float32 [outer, in, inner] ->
// [outer, out, inner]; a multi-dim resampling is one pass per dim.
struct InterpPass {
  int64_t outer = 1, in = 1, out = 1, inner = 1;
  float scale = 1;  // source step per output step (area_pixel_compute_scale)
  InterpMode mode = InterpMode::Linear;
  bool align_corners = false;
};

void interp_pass(Device& dev, uint64_t in, uint64_t out, const InterpPass& p);
// grad_in (float32, zeroed, [outer, in, inner]) += adjoint of grad_out [outer, out, inner].
void interp_pass_backward(Device& dev, uint64_t grad_out, uint64_t grad_in, const InterpPass& p);

}  // namespace vkml::ops
