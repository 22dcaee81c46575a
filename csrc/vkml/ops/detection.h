#pragma once
// The detection ops torchvision registers: the overlap mask of non-maximum suppression
// (torchvision::nms), roi_align and roi_pool with their backwards; float32, and float64
// where the device has it.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// boxes [n, 4] (x1, y1, x2, y2), contiguous, of `dtype`, sorted by decreasing score;
// mask [n, ceil(n / 32)] uint32 is fully written: bit j of row i when j > i and box j's
// intersection over union with box i exceeds `threshold`.
void nms_overlap_mask(Device& dev, uint64_t boxes, uint64_t mask, int64_t n, double threshold,
                      DType dtype);

struct RoiShape {
  int64_t batch = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 0;                           // rois
  int64_t ph = 1, pw = 1;                  // bins per roi
  double spatial_scale = 1.0;
  int64_t sampling_ratio = -1;  // roi_align: samples per bin side; <= 0: adaptive
  bool aligned = false;         // roi_align: pixel centres at +0.5
  DType dtype = DType::f32;     // of input, rois, output and gradients: f32 or f64
};

// input [batch, c, h, w], rois [k, 5], out [k, c, ph, pw]: contiguous, of s.dtype.
void roi_align(Device& dev, uint64_t input, uint64_t rois, uint64_t out, const RoiShape& s);
// grad_input (zeroed, [batch, c, h, w]) += the input gradient of grad_out [k, c, ph, pw].
void roi_align_backward(Device& dev, uint64_t grad_out, uint64_t rois, uint64_t grad_input,
                        const RoiShape& s);

// input [batch, c, h, w], rois [k, 5], out [k, c, ph, pw] and argmax (int32, as out):
// contiguous, of s.dtype (argmax int32).
void roi_pool(Device& dev, uint64_t input, uint64_t rois, uint64_t out, uint64_t argmax,
              const RoiShape& s);
// grad_input (zeroed, [batch, c, h, w]) += grad_out [k, c, ph, pw] at the forward's argmax.
void roi_pool_backward(Device& dev, uint64_t grad_out, uint64_t rois, uint64_t argmax,
                       uint64_t grad_input, const RoiShape& s);

// Whether the device has the kernels for dtype (the backward's when `backward`).
bool detection_supports(const Device& dev, DType dtype, bool backward);

}  // namespace vkml::ops
