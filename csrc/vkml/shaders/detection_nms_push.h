// The push constants of shaders/detection_nms.comp, written once for its launcher
// (vkml/ops/detection.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
#ifndef VKML_DETECTION_NMS_PUSH_H
#define VKML_DETECTION_NMS_PUSH_H

// Threads per workgroup (the kernel's local size); each thread fills one 32-bit word.
#define DETECTION_NMS_WG 64

#include "push_block.h"

VKML_CONTRACT_BEGIN(detection_nms_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t boxes;      // [n, 4] (x1, y1, x2, y2), sorted by decreasing score
  uint64_t mask;       // [n, words] uint32: bit j of row i set when j > i overlaps i
  uint64_t threshold;  // the IoU threshold's double bits (f64 variant)
  float threshold_f32; // the same, rounded (f32 variant)
  uint n;
  uint words;          // ceil(n / 32)
VKML_PUSH_END(Push, 3 * 8 + 3 * 4 + 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(detection_nms_detail)

#endif
