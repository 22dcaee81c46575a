// The push constants of shaders/detection_roi_align.comp, written once for its launcher
// (vkml/ops/detection.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_DETECTION_ROI_ALIGN_PUSH_H
#define VKML_DETECTION_ROI_ALIGN_PUSH_H

// Threads per workgroup (the kernel's local size).
#define DETECTION_ROI_ALIGN_WG 128

#include "push_block.h"

VKML_CONTRACT_BEGIN(detection_roi_align_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t image;        // [batch, c, h, w]; bwd: grad_input, zeroed, added into
  uint64_t rois;         // [k, 5]: (batch index, x1, y1, x2, y2)
  uint64_t pooled;       // [k, c, ph, pw]; bwd: grad_output
  uint64_t scale;        // spatial_scale's double bits (f64 variants)
  float scale_f32;       // the same, rounded (f32 variants)
  uint k, c, h, w, ph, pw;
  int sampling_ratio;    // samples per bin side; <= 0: ceil(roi side / bins)
  uint aligned;          // 1: pixel centres at +0.5 (aligned=True)
  uint batch;            // input's batch size (a roi's batch index is checked against it)
VKML_PUSH_END(Push, 4 * 8 + 10 * 4)
VKML_CONTRACT_END(detection_roi_align_detail)

#endif
