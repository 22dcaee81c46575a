// The push constants of shaders/grid_sample.comp, written once for its launcher
// (vkml/ops/grid_sample.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// The modes and paddings are vkml::ops::GridInterp's and GridPadding's values.
#ifndef VKML_GRID_SAMPLE_PUSH_H
#define VKML_GRID_SAMPLE_PUSH_H

#define GRID_SAMPLE_BILINEAR 0
#define GRID_SAMPLE_NEAREST 1
#define GRID_SAMPLE_BICUBIC 2
#define GRID_SAMPLE_ZEROS 0
#define GRID_SAMPLE_BORDER 1
#define GRID_SAMPLE_REFLECTION 2

// flags
#define GRID_SAMPLE_GRAD_INPUT 1u
#define GRID_SAMPLE_GRAD_GRID 2u

// Threads per workgroup (the kernel's local size).
#define GRID_SAMPLE_WG 128

#include "push_block.h"

VKML_CONTRACT_BEGIN(grid_sample_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t src;  // input
  uint64_t grid;
  uint64_t dst;         // forward: output; bwd: grad_output
  uint64_t grad_input;  // bwd, zeroed
  uint64_t grad_grid;   // bwd
  uint n, c, id, ih, iw, od, oh, ow;
  int mode, padding;
  uint align_corners;
  uint dims;  // 2 or 3
  uint flags;
VKML_PUSH_END(Push, 5 * 8 + 14 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(grid_sample_detail)

#endif
