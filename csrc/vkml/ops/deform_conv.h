#pragma once
// The sampling steps of torchvision's deformable convolution (torchvision::deform_conv2d
// and its backward): deformable im2col, its transpose into the input's gradient, and the
// offsets' and mask's gradients. The GEMMs between them run as ordinary matrix products.
// float32, and float64 where the device has it.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct DeformConvShape {
  int64_t images = 1, c = 1, h = 1, w = 1;  // this launch's chunk of the input
  int64_t kh = 1, kw = 1, out_h = 1, out_w = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t offset_groups = 1;
  bool use_mask = false;
  DType dtype = DType::f32;  // of every tensor: f32 or f64
};

// The chunk's tensors, contiguous: input [images, c, h, w], offset [images,
// offset_groups * kh * kw * 2, out_h, out_w], mask [images, offset_groups * kh * kw,
// out_h, out_w] (unread without use_mask), columns [c * kh * kw, images * out_h * out_w].
struct DeformConvBuffers {
  uint64_t input = 0, offset = 0, mask = 0, columns = 0;
};

// columns = the masked samples of every tap.
void deform_conv_im2col(Device& dev, const DeformConvBuffers& b, const DeformConvShape& s);
// grad_input (shaped as the input) += the input gradient of the column gradients in
// b.columns; b.input is not read.
void deform_conv_col2im(Device& dev, const DeformConvBuffers& b, uint64_t grad_input,
                        const DeformConvShape& s);
// grad_offset (shaped as offset) and, with use_mask, grad_mask (shaped as mask) = the
// gradients of the column gradients in b.columns; fully written.
void deform_conv_coord(Device& dev, const DeformConvBuffers& b, uint64_t grad_offset,
                       uint64_t grad_mask, const DeformConvShape& s);

// Whether the device has the kernels for dtype (the backward's when `backward`).
bool deform_conv_supports(const Device& dev, DType dtype, bool backward);

}  // namespace vkml::ops
