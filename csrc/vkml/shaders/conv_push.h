// The push constants of shaders/conv.comp and conv_gemm.comp, written once for their
// launcher (vkml/ops/conv.cpp, C++) and the kernels (GLSL), which read the bytes as laid
// out here (conv.comp leaves splits and flags unread). ivec3 is int[3] in C++: the same
// 12 bytes in GLSL's scalar layout. The 64-bit fields come first, so C++ adds no padding
// between fields.
#ifndef VKML_CONV_PUSH_H
#define VKML_CONV_PUSH_H

// flags of conv_gemm.comp
#define CONV_PARTIAL 1u
#define CONV_SUM 2u

// Modes (specialization constant 0): conv.comp runs 0-2, conv_gemm.comp 0-3. The launcher
// sizes its pipeline slots by the last, CONV_PHASED_DATA_GRAD.
#define CONV_FORWARD 0           // x, w (and bias [Co]) into y
#define CONV_DATA_GRAD 1         // gy, w (and bias [Ci]) into gx
#define CONV_WEIGHT_GRAD 2       // x, gy into gw
#define CONV_PHASED_DATA_GRAD 3  // conv_gemm.comp: a strided, undilated data grad by phases

#include "push_block.h"

VKML_CONTRACT_BEGIN(conv_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t p0, p1, p2, dst;
  uint n, groups, ci, co;
  ivec3 isz, osz, ksz, str, pad, dil;
  uint splits;  // conv_gemm.comp: K slices (CONV_PARTIAL, CONV_SUM)
  uint flags;
VKML_PUSH_END(Push, 4 * 8 + 24 * 4)
VKML_CONTRACT_END(conv_detail)

#endif
