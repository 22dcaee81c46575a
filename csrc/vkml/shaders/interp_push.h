// The push constants of shaders/interp.comp, written once for its launcher
// (vkml/ops/upsample.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// The modes are vkml::ops::InterpMode's values.
#ifndef VKML_INTERP_PUSH_H
#define VKML_INTERP_PUSH_H

#define INTERP_LINEAR 0u
#define INTERP_CUBIC 1u
#define INTERP_AA_LINEAR 2u
#define INTERP_AA_CUBIC 3u

// Threads per workgroup (the kernel's local size).
#define INTERP_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(interp_detail)
VKML_PUSH_BEGIN(InterpPush)
  uint64_t src;  // forward: input; bwd: grad_out
  uint64_t dst;  // forward: output; bwd: grad_in (zeroed)
  uint in_size, out_size, inner;
  float scale;    // source step per output step (area_pixel_compute_scale)
  float support;  // antialiased modes: half-width of the filter in source pixels
  uint mode;
  uint align_corners;
  uint numel;  // outer * out_size * inner
VKML_PUSH_END(InterpPush, 2 * 8 + 8 * 4)
VKML_CONTRACT_END(interp_detail)

#endif
