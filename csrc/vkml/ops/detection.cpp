#include "vkml/ops/detection.h"

#include <cstring>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/detection_nms_push.h"
#include "vkml/shaders/detection_roi_align_push.h"
#include "vkml/shaders/detection_roi_pool_push.h"

namespace vkml::ops {

namespace {

uint64_t double_bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// What roi_align's and roi_pool's launches share: the fields of their pushes and the
// accesses to them. image: the input (forward) or grad_input (backward, added into);
// pooled: the output (forward) or grad_output (backward).
template <class Push>
void set_roi_fields(Push& p, uint64_t image, uint64_t rois, uint64_t pooled, const RoiShape& s,
                    bool backward, const char* op, Access& access) {
  const int64_t outputs = s.k * s.c * s.ph * s.pw;
  const int64_t in_numel = s.batch * s.c * s.h * s.w;
  check_32bit_indexing(outputs, outputs, op);
  check_32bit_indexing(in_numel, in_numel, op);
  p.image = image;
  p.rois = rois;
  p.pooled = pooled;
  p.scale = double_bits(s.spatial_scale);
  p.scale_f32 = float(s.spatial_scale);
  p.k = uint32_t(s.k);
  p.c = uint32_t(s.c);
  p.h = uint32_t(s.h);
  p.w = uint32_t(s.w);
  p.ph = uint32_t(s.ph);
  p.pw = uint32_t(s.pw);
  p.batch = uint32_t(s.batch);
  const size_t item = itemsize(s.dtype);
  access.read(span_elems(rois, s.k * 5, item));
  if (backward) {
    access.read(span_elems(pooled, outputs, item));
    access.update(span_elems(image, in_numel, item));  // accumulated into
  } else {
    access.read(span_elems(image, in_numel, item));
    access.write(span_elems(pooled, outputs, item));
  }
}

void launch_roi_align(Device& dev, uint64_t image, uint64_t rois, uint64_t pooled,
                      const RoiShape& s, bool backward) {
  VKML_CHECK_ARG(detection_supports(dev, s.dtype, backward),
                 "roi_align: no kernel for this dtype on this device");
  const int64_t outputs = s.k * s.c * s.ph * s.pw;
  if (outputs == 0) return;
  detection_roi_align_detail::Push p{};
  Access access;
  set_roi_fields(p, image, rois, pooled, s, backward, "roi_align", access);
  p.sampling_ratio = int32_t(s.sampling_ratio > 0 ? s.sampling_ratio : 0);
  p.aligned = s.aligned ? 1u : 0u;
  const bool f64 = s.dtype == DType::f64;
  const Shader shader =
      backward ? (f64 ? Shader::detection_roi_align_bwd_f64 : Shader::detection_roi_align_bwd)
               : (f64 ? Shader::detection_roi_align_fwd_f64 : Shader::detection_roi_align_fwd);
  dispatch_1d(dev, dev.pipelines().get(shader), &p, sizeof(p), uint64_t(outputs),
              DETECTION_ROI_ALIGN_WG, &access);
}

// As launch_roi_align, with the int32 argmax of each output (written forward, read back).
void launch_roi_pool(Device& dev, uint64_t image, uint64_t rois, uint64_t pooled, uint64_t argmax,
                     const RoiShape& s, bool backward) {
  VKML_CHECK_ARG(detection_supports(dev, s.dtype, backward),
                 "roi_pool: no kernel for this dtype on this device");
  const int64_t outputs = s.k * s.c * s.ph * s.pw;
  if (outputs == 0) return;
  detection_roi_pool_detail::Push p{};
  Access access;
  set_roi_fields(p, image, rois, pooled, s, backward, "roi_pool", access);
  p.argmax = argmax;
  if (backward)
    access.read(span_elems(argmax, outputs, sizeof(int32_t)));
  else
    access.write(span_elems(argmax, outputs, sizeof(int32_t)));
  const bool f64 = s.dtype == DType::f64;
  const Shader shader =
      backward ? (f64 ? Shader::detection_roi_pool_bwd_f64 : Shader::detection_roi_pool_bwd)
               : (f64 ? Shader::detection_roi_pool_fwd_f64 : Shader::detection_roi_pool_fwd);
  dispatch_1d(dev, dev.pipelines().get(shader), &p, sizeof(p), uint64_t(outputs),
              DETECTION_ROI_POOL_WG, &access);
}

}  // namespace

bool detection_supports(const Device& dev, DType dtype, bool backward) {
  if (dtype == DType::f32) return true;
  return dtype == DType::f64 && dev.info().supports_fp64 &&
         (!backward || dev.info().supports_int64_atomics);
}

void nms_overlap_mask(Device& dev, uint64_t boxes, uint64_t mask, int64_t n, double threshold,
                      DType dtype) {
  VKML_CHECK_ARG(detection_supports(dev, dtype, false),
                 "nms: no kernel for this dtype on this device");
  if (n == 0) return;
  const int64_t words = ceil_div(n, 32);
  check_32bit_indexing(n * words, n * words, "nms");
  check_32bit_indexing(4 * n, 4 * n, "nms");
  detection_nms_detail::Push p{};
  p.boxes = boxes;
  p.mask = mask;
  p.threshold = double_bits(threshold);
  p.threshold_f32 = float(threshold);
  p.n = uint32_t(n);
  p.words = uint32_t(words);
  Access access;
  access.read(span_elems(boxes, 4 * n, itemsize(dtype)));
  access.write(span_elems(mask, n * words, sizeof(uint32_t)));
  dispatch_1d(dev,
              dev.pipelines().get(dtype == DType::f64 ? Shader::detection_nms_f64
                                                      : Shader::detection_nms_f32),
              &p, sizeof(p), uint64_t(n * words), DETECTION_NMS_WG, &access);
}

void roi_align(Device& dev, uint64_t input, uint64_t rois, uint64_t out, const RoiShape& s) {
  launch_roi_align(dev, input, rois, out, s, false);
}

void roi_align_backward(Device& dev, uint64_t grad_out, uint64_t rois, uint64_t grad_input,
                        const RoiShape& s) {
  launch_roi_align(dev, grad_input, rois, grad_out, s, true);
}

void roi_pool(Device& dev, uint64_t input, uint64_t rois, uint64_t out, uint64_t argmax,
              const RoiShape& s) {
  launch_roi_pool(dev, input, rois, out, argmax, s, false);
}

void roi_pool_backward(Device& dev, uint64_t grad_out, uint64_t rois, uint64_t argmax,
                       uint64_t grad_input, const RoiShape& s) {
  launch_roi_pool(dev, grad_input, rois, grad_out, argmax, s, true);
}

}  // namespace vkml::ops
