// The push constants of shaders/bilinear.comp, written once for its launcher
// (vkml/ops/upsample.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_BILINEAR_PUSH_H
#define VKML_BILINEAR_PUSH_H

// Threads per workgroup (the kernel's local size).
#define BILINEAR_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(bilinear_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t src;  // forward: input; bwd: grad_out (float32)
  uint64_t dst;  // forward: output; bwd: grad_in (float32, zeroed)
  uint ih, iw, oh, ow;
  float scale_h, scale_w;
  uint align_corners;
  uint numel;  // planes * oh * ow
VKML_PUSH_END(Push, 2 * 8 + 8 * 4)
VKML_CONTRACT_END(bilinear_detail)

#endif
