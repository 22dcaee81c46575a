// The push constants of shaders/remap.comp, written once for its launcher
// (vkml/ops/remap.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// The index-map modes are shared with vkml/ops/remap.h.
#ifndef VKML_REMAP_PUSH_H
#define VKML_REMAP_PUSH_H

// Dims a dispatch maps; more are looped on the host.
#define REMAP_DIMS 6

// Index-map modes, 4 bits per dim of `modes`.
#define REMAP_IDENTITY 0
#define REMAP_FLIP 1
#define REMAP_ROLL 2
#define REMAP_CONSTANT 3
#define REMAP_REFLECT 4
#define REMAP_REPLICATE 5
#define REMAP_CIRCULAR 6
#define REMAP_NEAREST 7
#define REMAP_NEAREST_EXACT 8
#define REMAP_DIV 9

// Threads per workgroup (the kernel's local size).
#define REMAP_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(remap_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t dst;
  uint64_t src;
  int osize[REMAP_DIMS];
  int istride[REMAP_DIMS];
  int isize[REMAP_DIMS];
  int param[REMAP_DIMS];  // pad before / shift / divisor / float bits of the scale
  uint modes;
  uint numel;
  int ndim;
VKML_PUSH_END(Push, 2 * 8 + 28 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(remap_detail)

#endif
