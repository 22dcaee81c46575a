// The detection ops of torchvision (torchvision::nms, roi_align, roi_pool and their
// backwards), registered under torchvision's namespace for vkml tensors, so Faster /
// Mask R-CNN, RetinaNet and the like keep their boxes on the device. torchvision
// defines the ops when it loads; a kernel registered before that waits for its schema.
// Autocast casts them to float32, as torchvision does for CUDA. float16 and bfloat16
// run in float32; float64 on a device without it takes the counted CPU route.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <vector>

#include "op_helpers.h"
#include "torchvision_ops.h"
#include "vkml/ops/detection.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// The dtype a kernel computes in: float64 where the device has its kernel, else float32.
bool computes_in_f64(const at::Tensor& t, bool backward) {
  return t.scalar_type() == at::kDouble &&
         vkml::ops::detection_supports(vkml_device(t), vkml::DType::f64, backward);
}
at::ScalarType compute_type(const at::Tensor& t, bool backward) {
  return computes_in_f64(t, backward) ? at::kDouble : at::kFloat;
}
vkml::DType vk_dtype(at::ScalarType t) {
  return t == at::kDouble ? vkml::DType::f64 : vkml::DType::f32;
}

at::Tensor vk_nms(const at::Tensor& dets, const at::Tensor& scores, double iou_threshold) {
  // torchvision's checks, in its words.
  TORCH_CHECK(dets.dim() == 2, "boxes should be a 2d tensor, got ", dets.dim(), "D");
  TORCH_CHECK(dets.size(1) == 4, "boxes should have 4 elements in dimension 1, got ", dets.size(1));
  TORCH_CHECK(scores.dim() == 1, "scores should be a 1d tensor, got ", scores.dim(), "D");
  TORCH_CHECK(dets.size(0) == scores.size(0),
              "boxes and scores should have same number of elements in dimension 0, got ",
              dets.size(0), " and ", scores.size(0));
  TORCH_CHECK(dets.scalar_type() == scores.scalar_type(),
              "dets should have the same type as scores");
  TORCH_CHECK(at::isFloatingType(dets.scalar_type()), "nms: expected floating-point boxes, got ",
              dets.scalar_type());
  check_same_device(dets, scores, "nms");
  const int64_t n = dets.size(0);
  if (n == 0) return at::empty({0}, dets.options().dtype(at::kLong));
  if (dets.scalar_type() == at::kDouble && !computes_in_f64(dets, false))
    return torchvision_on_cpu("torchvision::nms", dets, scores, iou_threshold)[0].toTensor();

  const at::Tensor order = std::get<1>(scores.sort(/*stable=*/true, 0, /*descending=*/true));
  const at::ScalarType type = compute_type(dets, false);
  const at::Tensor boxes = dets.index_select(0, order).to(type).contiguous();
  const int64_t words = (n + 31) / 32;
  at::Tensor mask = at::empty({n, words}, dets.options().dtype(at::kInt));
  guarded([&] {
    vkml::ops::nms_overlap_mask(vkml_device(boxes), addr(boxes), addr(mask), n, iou_threshold,
                                vk_dtype(type));
  });
  // The sweep is serial and its result's length is data: read the mask (n * n / 8
  // bytes) and walk it here, as torchvision's CUDA kernel does.
  const at::Tensor host = mask.cpu();
  const auto* bits = reinterpret_cast<const uint32_t*>(host.const_data_ptr<int32_t>());
  std::vector<uint32_t> removed(size_t(words), 0u);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (removed[size_t(i / 32)] & (1u << (i % 32))) continue;
    keep.push_back(i);
    const uint32_t* row = bits + i * words;
    for (int64_t w = i / 32; w < words; ++w) removed[size_t(w)] |= row[w];
  }
  // Uploaded at once (pageable memory is staged), and known to be in range.
  const at::Tensor kept = at::tensor(keep, at::TensorOptions().dtype(at::kLong)).to(dets.device());
  return order.index_select(0, kept);
}

vkml::ops::RoiShape roi_shape(int64_t batch, int64_t channels, int64_t height, int64_t width,
                              const at::Tensor& rois, double spatial_scale, int64_t pooled_height,
                              int64_t pooled_width, int64_t sampling_ratio, bool aligned,
                              const char* op) {
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5, "rois must have shape as Tensor[K, 5]");
  TORCH_CHECK(pooled_height > 0 && pooled_width > 0, op,
              ": pooled_height and pooled_width must be positive, got ", pooled_height, " and ",
              pooled_width);
  vkml::ops::RoiShape s;
  s.batch = batch;
  s.c = channels;
  s.h = height;
  s.w = width;
  s.k = rois.size(0);
  s.ph = pooled_height;
  s.pw = pooled_width;
  s.spatial_scale = spatial_scale;
  s.sampling_ratio = sampling_ratio;
  s.aligned = aligned;
  return s;
}

// The forward's checks (torchvision's where it has them) and shape.
vkml::ops::RoiShape checked_input_shape(const at::Tensor& input, const at::Tensor& rois,
                                        double spatial_scale, int64_t pooled_height,
                                        int64_t pooled_width, int64_t sampling_ratio, bool aligned,
                                        const char* op, const char* checked_from) {
  at::checkAllSameType(checked_from, {{input, "input", 1}, {rois, "rois", 2}});
  check_same_device(input, rois, op);
  TORCH_CHECK(input.dim() == 4, op, ": expected a 4-d input [N, C, H, W], got ", input.dim(), "-d");
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), op,
              ": expected a floating-point input, got ", input.scalar_type());
  return roi_shape(input.size(0), input.size(1), input.size(2), input.size(3), rois, spatial_scale,
                   pooled_height, pooled_width, sampling_ratio, aligned, op);
}

// The backward's checks and shape: grad is [k, channels, pooled_height, pooled_width].
vkml::ops::RoiShape checked_grad_shape(const at::Tensor& grad, const at::Tensor& rois,
                                       double spatial_scale, int64_t pooled_height,
                                       int64_t pooled_width, int64_t batch_size, int64_t channels,
                                       int64_t height, int64_t width, int64_t sampling_ratio,
                                       bool aligned, const char* op, const char* checked_from) {
  at::checkAllSameType(checked_from, {{grad, "grad", 1}, {rois, "rois", 2}});
  check_same_device(grad, rois, op);
  auto s = roi_shape(batch_size, channels, height, width, rois, spatial_scale, pooled_height,
                     pooled_width, sampling_ratio, aligned, op);
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == s.k && grad.size(1) == channels &&
                  grad.size(2) == pooled_height && grad.size(3) == pooled_width,
              op, " backward: grad has sizes ", grad.sizes(), ", expected [", s.k, ", ", channels,
              ", ", pooled_height, ", ", pooled_width, "]");
  return s;
}

// The part roi_align's and roi_pool's backwards share: grad_input [batch, c, h, w] in
// the compute dtype, zeroed, which `launch(g, r, grad_input)` adds into, with grad and
// rois in that dtype and contiguous; returned in grad's dtype.
template <class Launch>
at::Tensor add_into_grad_input(const at::Tensor& grad, const at::Tensor& rois,
                               vkml::ops::RoiShape& s, Launch launch) {
  const at::ScalarType type = compute_type(grad, true);
  s.dtype = vk_dtype(type);
  at::Tensor grad_input = at::zeros({s.batch, s.c, s.h, s.w}, grad.options().dtype(type));
  if (grad.numel() == 0 || grad_input.numel() == 0) return grad_input.to(grad.scalar_type());
  const at::Tensor g = grad.to(type).contiguous();
  const at::Tensor r = rois.to(type).contiguous();
  guarded([&] { launch(g, r, grad_input); });
  return grad_input.to(grad.scalar_type());
}

at::Tensor vk_roi_align(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                        int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                        bool aligned) {
  auto s = checked_input_shape(input, rois, spatial_scale, pooled_height, pooled_width,
                               sampling_ratio, aligned, "roi_align", "roi_align_forward_kernel");
  if (input.scalar_type() == at::kDouble && !computes_in_f64(input, false))
    return torchvision_on_cpu("torchvision::roi_align", input, rois, spatial_scale, pooled_height,
                              pooled_width, sampling_ratio, aligned)[0]
        .toTensor();
  const at::ScalarType type = compute_type(input, false);
  s.dtype = vk_dtype(type);
  // The kernel writes every output (zeros for a roi outside the batch): no fill first.
  at::Tensor out = at::empty({s.k, s.c, s.ph, s.pw}, input.options().dtype(type));
  if (input.numel() == 0 || out.numel() == 0) return out.zero_().to(input.scalar_type());
  const at::Tensor x = input.to(type).contiguous();
  const at::Tensor r = rois.to(type).contiguous();
  guarded([&] { vkml::ops::roi_align(vkml_device(x), addr(x), addr(r), addr(out), s); });
  return out.to(input.scalar_type());
}

at::Tensor vk_roi_align_backward(const at::Tensor& grad, const at::Tensor& rois,
                                 double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                 int64_t batch_size, int64_t channels, int64_t height,
                                 int64_t width, int64_t sampling_ratio, bool aligned) {
  auto s = checked_grad_shape(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                              channels, height, width, sampling_ratio, aligned, "roi_align",
                              "roi_align_backward_kernel");
  alert_atomic_adds("roi_align_backward_kernel");
  if (grad.scalar_type() == at::kDouble && !computes_in_f64(grad, true))
    return torchvision_on_cpu("torchvision::_roi_align_backward", grad, rois, spatial_scale,
                              pooled_height, pooled_width, batch_size, channels, height, width,
                              sampling_ratio, aligned)[0]
        .toTensor();
  return add_into_grad_input(
      grad, rois, s, [&](const at::Tensor& g, const at::Tensor& r, const at::Tensor& grad_input) {
        vkml::ops::roi_align_backward(vkml_device(g), addr(g), addr(r), addr(grad_input), s);
      });
}

std::tuple<at::Tensor, at::Tensor> vk_roi_pool(const at::Tensor& input, const at::Tensor& rois,
                                               double spatial_scale, int64_t pooled_height,
                                               int64_t pooled_width) {
  auto s = checked_input_shape(input, rois, spatial_scale, pooled_height, pooled_width, 0, false,
                               "roi_pool", "roi_pool_forward_kernel");
  if (input.scalar_type() == at::kDouble && !computes_in_f64(input, false)) {
    auto r = torchvision_on_cpu("torchvision::roi_pool", input, rois, spatial_scale, pooled_height,
                                pooled_width);
    return {r[0].toTensor(), r[1].toTensor()};
  }
  const at::ScalarType type = compute_type(input, false);
  s.dtype = vk_dtype(type);
  // The kernel writes every output and argmax: no fill first.
  at::Tensor out = at::empty({s.k, s.c, s.ph, s.pw}, input.options().dtype(type));
  at::Tensor argmax = at::empty({s.k, s.c, s.ph, s.pw}, input.options().dtype(at::kInt));
  if (out.numel() == 0) return {out.to(input.scalar_type()), argmax};
  if (input.numel() == 0) return {out.zero_().to(input.scalar_type()), argmax.fill_(-1)};
  const at::Tensor x = input.to(type).contiguous();
  const at::Tensor r = rois.to(type).contiguous();
  guarded(
      [&] { vkml::ops::roi_pool(vkml_device(x), addr(x), addr(r), addr(out), addr(argmax), s); });
  return {out.to(input.scalar_type()), argmax};
}

at::Tensor vk_roi_pool_backward(const at::Tensor& grad, const at::Tensor& rois,
                                const at::Tensor& argmax, double spatial_scale,
                                int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
                                int64_t channels, int64_t height, int64_t width) {
  auto s =
      checked_grad_shape(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                         channels, height, width, 0, false, "roi_pool", "roi_pool_backward_kernel");
  alert_atomic_adds("roi_pool_backward_kernel");
  check_same_device(grad, argmax, "roi_pool");
  TORCH_CHECK(argmax.sizes() == grad.sizes() && argmax.scalar_type() == at::kInt,
              "roi_pool backward: expected an int32 argmax of sizes ", grad.sizes(), ", got ",
              argmax.scalar_type(), " of sizes ", argmax.sizes());
  if (grad.scalar_type() == at::kDouble && !computes_in_f64(grad, true))
    return torchvision_on_cpu("torchvision::_roi_pool_backward", grad, rois, argmax, spatial_scale,
                              pooled_height, pooled_width, batch_size, channels, height, width)[0]
        .toTensor();
  const at::Tensor a = argmax.contiguous();
  return add_into_grad_input(
      grad, rois, s, [&](const at::Tensor& g, const at::Tensor& r, const at::Tensor& grad_input) {
        vkml::ops::roi_pool_backward(vkml_device(g), addr(g), addr(r), addr(a), addr(grad_input),
                                     s);
      });
}

// Autocast, as torchvision's for CUDA: the op runs in float32 and returns the input's dtype.
constexpr auto kAutocast = c10::DispatchKey::AutocastPrivateUse1;

at::Tensor nms_autocast(const at::Tensor& dets, const at::Tensor& scores, double iou_threshold) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocast);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torchvision::nms", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
  return op.call(at::autocast::cached_cast(at::kFloat, dets, c10::DeviceType::PrivateUse1),
                 at::autocast::cached_cast(at::kFloat, scores, c10::DeviceType::PrivateUse1),
                 iou_threshold);
}

at::Tensor roi_align_autocast(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                              bool aligned) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocast);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torchvision::roi_align", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, c10::SymInt,
                                         c10::SymInt, int64_t, bool)>();
  return op
      .call(at::autocast::cached_cast(at::kFloat, input, c10::DeviceType::PrivateUse1),
            at::autocast::cached_cast(at::kFloat, rois, c10::DeviceType::PrivateUse1),
            spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)
      .to(input.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> roi_pool_autocast(const at::Tensor& input,
                                                     const at::Tensor& rois, double spatial_scale,
                                                     int64_t pooled_height, int64_t pooled_width) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocast);
  static auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("torchvision::roi_pool", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, double,
                                                    c10::SymInt, c10::SymInt)>();
  auto [out, argmax] =
      op.call(at::autocast::cached_cast(at::kFloat, input, c10::DeviceType::PrivateUse1),
              at::autocast::cached_cast(at::kFloat, rois, c10::DeviceType::PrivateUse1),
              spatial_scale, pooled_height, pooled_width);
  return {out.to(input.scalar_type()), argmax};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchvision, PrivateUse1, m) {
  m.impl("nms", TORCH_FN(vk_nms));
  m.impl("roi_align", TORCH_FN(vk_roi_align));
  m.impl("_roi_align_backward", TORCH_FN(vk_roi_align_backward));
  m.impl("roi_pool", TORCH_FN(vk_roi_pool));
  m.impl("_roi_pool_backward", TORCH_FN(vk_roi_pool_backward));
}

TORCH_LIBRARY_IMPL(torchvision, AutocastPrivateUse1, m) {
  m.impl("nms", TORCH_FN(nms_autocast));
  m.impl("roi_align", TORCH_FN(roi_align_autocast));
  m.impl("roi_pool", TORCH_FN(roi_pool_autocast));
}

}  // namespace vkml_aten
