// The push constants of shaders/histogram.comp, written once for its launcher
// (vkml/ops/search.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_HISTOGRAM_PUSH_H
#define VKML_HISTOGRAM_PUSH_H

// Threads per workgroup (the kernel's local size).
#define HISTOGRAM_WG 256

// Modes (specialization constant 0).
#define HISTOGRAM_HISTC 0              // histc over float32 values: int32 counts
#define HISTOGRAM_BINCOUNT 1           // bincount of int64 values: int32 counts
#define HISTOGRAM_WEIGHTED_BINCOUNT 2  // bincount with float32 weights: float32 sums

#include "push_block.h"

VKML_CONTRACT_BEGIN(histogram_detail)
VKML_PUSH_BEGIN(HistPush)
  uint64_t src;
  uint64_t weights;
  uint64_t bins;
  float lo;
  float hi;
  uint nbins;
  uint numel;
VKML_PUSH_END(HistPush, 3 * 8 + 4 * 4)
VKML_CONTRACT_END(histogram_detail)

#endif
