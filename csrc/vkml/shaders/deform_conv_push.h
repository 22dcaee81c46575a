// The push constants of shaders/deform_conv.comp, written once for its launcher
// (vkml/ops/deform_conv.cpp, C++) and the kernel (GLSL), which reads the bytes as laid
// out here. The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_DEFORM_CONV_PUSH_H
#define VKML_DEFORM_CONV_PUSH_H

// Threads per workgroup (the kernel's local size).
#define DEFORM_CONV_WG 128

#include "push_block.h"

VKML_CONTRACT_BEGIN(deform_conv_detail)
VKML_PUSH_BEGIN(Push)
  // Addresses of the first image of the chunk of images a launch covers.
  uint64_t image;        // [images, c, h, w]: the input; col2im: grad_input, added into
  uint64_t columns;      // [c * kh * kw, images * out_h * out_w]: im2col writes, the others read
  uint64_t offset;       // [images, offset_groups * kh * kw * 2, out_h, out_w]: (dy, dx) pairs
  uint64_t mask;         // [images, offset_groups * kh * kw, out_h, out_w]; unread without use_mask
  uint64_t grad_offset;  // coord: like offset, written
  uint64_t grad_mask;    // coord: like mask, written where use_mask
  uint c, h, w, kh, kw, out_h, out_w;
  uint images;           // in this launch's chunk
  uint stride_h, stride_w, dil_h, dil_w;
  int pad_h, pad_w;
  uint offset_groups;
  uint use_mask;         // 0: every tap's mask is 1
VKML_PUSH_END(Push, 6 * 8 + 16 * 4)
VKML_CONTRACT_END(deform_conv_detail)

#endif
