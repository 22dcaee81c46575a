// The push constants of shaders/detection_roi_pool.comp, written once for its launcher
// (vkml/ops/detection.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_DETECTION_ROI_POOL_PUSH_H
#define VKML_DETECTION_ROI_POOL_PUSH_H

// Threads per workgroup (the kernel's local size).
#define DETECTION_ROI_POOL_WG 128

#include "push_block.h"

VKML_CONTRACT_BEGIN(detection_roi_pool_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t image;   // [batch, c, h, w]; bwd: grad_input, zeroed, added into
  uint64_t rois;    // [k, 5]: (batch index, x1, y1, x2, y2)
  uint64_t pooled;  // [k, c, ph, pw]; bwd: grad_output
  uint64_t argmax;  // [k, c, ph, pw] int32: the maximum's h * w + x in its plane, or -1
  uint64_t scale;   // spatial_scale's double bits (f64 variants)
  float scale_f32;  // the same, rounded (f32 variants)
  uint k, c, h, w, ph, pw;
  uint batch;       // input's batch size (a roi's batch index is checked against it)
VKML_PUSH_END(Push, 5 * 8 + 8 * 4)
VKML_CONTRACT_END(detection_roi_pool_detail)

#endif
