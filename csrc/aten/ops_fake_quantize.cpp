// Fake quantization for quantization-aware training (torch.ao.quantization's FakeQuantize
// and FusedMovingAvgObsFakeQuantize, the default QAT qconfigs): per-tensor and per-channel
// cachemask ops and the fused observer. Nothing is read back: qparams held in tensors stay
// on the device, the enable flags are read by the kernels, and the per-channel zero-point
// range check is a deferred device check (the CPU and CUDA read the zero points back).
// Backward passes are ATen's (gradient times mask), except LSQ's (learnable scale and zero
// point), composed here of native ops.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <limits>
#include <tuple>
#include <vector>

#include "fallback.h"
#include "vkml/ops/fake_quantize.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::FakeQuantParams;

void check_quant_range(int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max,
              "`quant_min` should be less than or         equal to `quant_max`.");
}

void check_input(const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(self.scalar_type()),
                              "fake quantization on vkml supports float32, float16 and bfloat16, "
                              "got ",
                              self.scalar_type());
}

// A float32 / int32 / int64 copy of a qparam or flag tensor on self's device (no copy when
// it is one already).
at::Tensor qparam_on_device(const at::Tensor& t, const at::Tensor& self, at::ScalarType dtype) {
  return t.to(self.device(), dtype).contiguous();
}

// The first element of a per-tensor qparam or flag tensor, as the CPU's kernels read it:
// a 1-element tensor on self's device.
at::Tensor first(const at::Tensor& t, const at::Tensor& self, at::ScalarType dtype) {
  return qparam_on_device(t.reshape(-1).narrow(0, 0, 1), self, dtype);
}

// Output and mask with self's strides (its layout when dense, as the CPU's empty_like with
// preserved format), the kernel run over them.
std::tuple<at::Tensor, at::Tensor> apply(const at::Tensor& self, FakeQuantParams q, int64_t axis,
                                         int64_t quant_min, int64_t quant_max,
                                         const at::Tensor& enabled) {
  check_input(self);
  at::Tensor x = self.is_non_overlapping_and_dense()
                     ? self
                     : at::empty_like(self, at::MemoryFormat::Preserve).copy_(self);
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Preserve);
  at::Tensor mask = at::empty_like(x, x.options().dtype(at::kBool), at::MemoryFormat::Preserve);
  if (axis >= 0 && x.dim() > 0) {
    q.channels = x.size(axis);
    q.channel_stride = x.size(axis) > 1 ? x.stride(axis) : 1;
  }
  const uint64_t flag = enabled.defined() ? addr(enabled) : 0;
  guarded([&] {
    vkml::ops::fake_quantize(vkml_device(x), to_vkml(x.scalar_type()), addr(x), addr(y), addr(mask),
                             x.numel(), q, quant_min, quant_max, flag);
  });
  return {y, mask};
}

// Array qparams: scale (float32), its reciprocals, zero point (int32), all [channels].
FakeQuantParams array_params(const at::Tensor& scale, const at::Tensor& inv_scale,
                             const at::Tensor& zero_point) {
  FakeQuantParams q;
  q.scale = addr(scale);
  q.inv_scale = addr(inv_scale);
  q.zero_point = addr(zero_point);
  q.channels = scale.numel();
  return q;
}

at::Tensor reciprocals(const at::Tensor& scale) {
  at::Tensor inv = at::empty_like(scale);
  guarded([&] {
    vkml::ops::fake_quantize_reciprocals(vkml_device(scale), addr(scale), addr(inv), scale.numel());
  });
  return inv;
}

std::tuple<at::Tensor, at::Tensor> vk_per_tensor_cachemask(const at::Tensor& self, double scale,
                                                           int64_t zero_point, int64_t quant_min,
                                                           int64_t quant_max) {
  check_quant_range(quant_min, quant_max);
  TORCH_CHECK(zero_point >= quant_min && zero_point <= quant_max,
              "`zero_point` must be between `quant_min` and `quant_max`.");
  FakeQuantParams q;
  q.scale_value = float(scale);
  q.inv_scale_value = 1.0f / q.scale_value;  // the CPU's reciprocal, rounded once
  q.zero_point_value = int32_t(zero_point);
  return apply(self, q, -1, quant_min, quant_max, at::Tensor());
}

std::tuple<at::Tensor, at::Tensor> vk_per_tensor_cachemask_tensor_qparams(
    const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point,
    const at::Tensor& fake_quant_enabled, int64_t quant_min, int64_t quant_max) {
  check_quant_range(quant_min, quant_max);
  TORCH_CHECK(scale.numel() >= 1 && zero_point.numel() >= 1 && fake_quant_enabled.numel() >= 1,
              "fake_quantize: scale, zero_point and fake_quant_enabled need an element");
  at::Tensor s = first(scale, self, at::kFloat);
  at::Tensor zp = first(zero_point, self, at::kInt);
  at::Tensor on = first(fake_quant_enabled, self, at::kLong);
  at::Tensor inv = reciprocals(s);
  return apply(self, array_params(s, inv, zp), -1, quant_min, quant_max, on);
}

std::tuple<at::Tensor, at::Tensor> vk_per_channel_cachemask(const at::Tensor& self,
                                                            const at::Tensor& scale,
                                                            const at::Tensor& zero_point,
                                                            int64_t axis, int64_t quant_min,
                                                            int64_t quant_max) {
  TORCH_CHECK(scale.scalar_type() == at::kFloat, "Scale must be Float, found ",
              scale.scalar_type());
  TORCH_CHECK(zero_point.scalar_type() == at::kInt || zero_point.scalar_type() == at::kFloat ||
                  zero_point.scalar_type() == at::kHalf,
              "Zero-point must be Int32, Float or Half, found ", zero_point.scalar_type());
  TORCH_CHECK(scale.dim() == 1, "scale should be a 1-D tensor");
  TORCH_CHECK(zero_point.dim() == 1, "zero point should be a 1-D tensor");
  TORCH_CHECK(scale.numel() == zero_point.numel(),
              "scale and zero-point need to have the same dimensions");
  TORCH_CHECK(scale.numel() == self.size(axis),  // an IndexError first for a bad axis
              "dimensions of scale and zero-point are not consistent with input tensor");
  TORCH_CHECK(axis >= 0 && axis <= self.dim(),
              "`axis` must be between 0 and number of dimensions of input");
  check_quant_range(quant_min, quant_max);
  if (zero_point.scalar_type() != at::kInt) {  // float zero points: rare, another formula
    return cpu_route<at::_ops::fake_quantize_per_channel_affine_cachemask>(
        self, scale, zero_point, axis, quant_min, quant_max);
  }
  at::Tensor s = qparam_on_device(scale, self, at::kFloat);
  at::Tensor zp = qparam_on_device(zero_point, self, at::kInt);
  at::Tensor inv = reciprocals(s);  // alive until the kernel is recorded
  FakeQuantParams q = array_params(s, inv, zp);
  q.check_zero_points = true;
  return apply(self, q, axis, quant_min, quant_max, at::Tensor());
}

// torch.ao.quantization's FusedMovingAvgObsFakeQuantize step: observe this batch's range
// into the running range, choose scale and zero point from it, fake-quantize.
std::tuple<at::Tensor, at::Tensor> vk_fused_moving_avg_obs_fq_helper(
    const at::Tensor& self, const at::Tensor& observer_on, const at::Tensor& fake_quant_on,
    at::Tensor& running_min, at::Tensor& running_max, at::Tensor& scale, at::Tensor& zero_point,
    double averaging_const, int64_t quant_min, int64_t quant_max, int64_t ch_axis,
    bool per_row_fake_quant, bool symmetric_quant) {
  TORCH_CHECK(ch_axis < self.dim(),
              "Error in fused_moving_avg_obs_fq_helper: ch_axis must be < self.dim()");
  TORCH_CHECK(self.scalar_type() == at::kFloat, "expected scalar type Float but found ",
              self.scalar_type());
  TORCH_CHECK(!per_row_fake_quant || ch_axis == 0,
              "Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on "
              "axis == 0");
  TORCH_CHECK(quant_min < quant_max, "In ChooseQuantizationParams, qmin should be less than qmax");
  for (const at::Tensor* t : {&running_min, &running_max, &scale})
    TORCH_CHECK(t->scalar_type() == at::kFloat, "expected scalar type Float but found ",
                t->scalar_type());
  TORCH_CHECK(zero_point.scalar_type() == at::kInt, "expected scalar type Int but found ",
              zero_point.scalar_type());
  const int64_t channels = per_row_fake_quant ? self.size(ch_axis) : 1;
  if (per_row_fake_quant && running_min.numel() == 0) {
    const float inf = std::numeric_limits<float>::infinity();
    running_min.resize_({channels}).fill_(inf);
    running_max.resize_({channels}).fill_(-inf);
    scale.resize_({channels});
    zero_point.resize_({channels});
  }
  for (const at::Tensor* t : {&running_min, &running_max, &scale, &zero_point})
    TORCH_CHECK(t->numel() == channels, "fused_moving_avg_obs_fq_helper: expected ", channels,
                " qparams, got a tensor of ", t->numel());

  // This batch's range: over everything, or over each row of the channel-first view.
  at::Tensor x_min, x_max;
  if (per_row_fake_quant) {
    std::tie(x_min, x_max) = at::aminmax(self.dim() == 2 ? self : self.flatten(1), 1);
  } else {
    std::tie(x_min, x_max) = at::aminmax(self);
  }
  // The kernels work on contiguous state; non-contiguous buffers get it copied back.
  at::Tensor rmin = running_min.contiguous(), rmax = running_max.contiguous();
  at::Tensor s = scale.contiguous(), zp = zero_point.contiguous();
  at::Tensor inv = at::empty_like(s);
  at::Tensor observe = first(observer_on, self, at::kLong);
  at::Tensor quantize = first(fake_quant_on, self, at::kLong);
  x_min = x_min.contiguous();
  x_max = x_max.contiguous();
  vkml::ops::FakeQuantObserver o;
  o.x_min = addr(x_min);
  o.x_max = addr(x_max);
  o.running_min = addr(rmin);
  o.running_max = addr(rmax);
  o.observer_on = addr(observe);
  o.fake_quant_on = addr(quantize);
  o.averaging_const = float(averaging_const);
  o.symmetric = symmetric_quant;
  guarded([&] {
    vkml::ops::fake_quantize_observe(vkml_device(self), o, addr(s), addr(inv), addr(zp), channels,
                                     quant_min, quant_max);
  });
  for (auto [kept, updated] :
       {std::pair{&running_min, &rmin}, {&running_max, &rmax}, {&scale, &s}, {&zero_point, &zp}})
    if (!kept->is_same(*updated)) kept->copy_(*updated);
  return apply(self, array_params(s, inv, zp), per_row_fake_quant ? ch_axis : -1, quant_min,
               quant_max, quantize);
}

// ---------------------------------------------- learnable qparams (LSQ, _LearnableFakeQuantize)

at::Tensor vk_learnable_per_tensor(const at::Tensor& self, const at::Tensor& scale,
                                   const at::Tensor& zero_point, int64_t quant_min,
                                   int64_t quant_max, double /*grad_factor*/) {
  check_quant_range(quant_min, quant_max);
  at::Tensor s = first(scale, self, at::kFloat);
  at::Tensor zp =
      first(zero_point, self, at::kFloat).round().clamp_(quant_min, quant_max).to(at::kInt);
  at::Tensor inv = reciprocals(s);
  return std::get<0>(apply(self, array_params(s, inv, zp), -1, quant_min, quant_max, at::Tensor()));
}

at::Tensor vk_learnable_per_channel(const at::Tensor& self, const at::Tensor& scale,
                                    const at::Tensor& zero_point, int64_t axis, int64_t quant_min,
                                    int64_t quant_max, double /*grad_factor*/) {
  at::Tensor zp = zero_point.round().clamp_(quant_min, quant_max).to(at::kInt);
  return std::get<0>(vk_per_channel_cachemask(self, scale, zp, axis, quant_min, quant_max));
}

// LSQ's gradients, element by element as the CPU's kernel computes them, then summed for
// the qparams over `sum_dims` (every dim for per-tensor ones). scale, inv_scale and the
// float zero point broadcast against x.
std::tuple<at::Tensor, at::Tensor, at::Tensor> learnable_grads(
    const at::Tensor& dy, const at::Tensor& x, const at::Tensor& scale, const at::Tensor& inv_scale,
    const at::Tensor& zp, int64_t quant_min, int64_t quant_max, double grad_factor,
    at::IntArrayRef sum_dims) {
  const at::Tensor xq = at::round(zp + x * inv_scale);
  const at::Tensor below = xq.lt(quant_min);
  const at::Tensor above = xq.gt(quant_max);
  const at::Tensor outside = at::logical_or(below, above);
  at::Tensor dx = dy * at::logical_not(outside);
  const at::Tensor fake = (xq.clamp(quant_min, quant_max) - zp) * scale;
  const at::Tensor inside_scale = dy * (fake - x) * inv_scale * grad_factor;
  const at::Tensor edge_scale =
      at::where(below, dy * (quant_min - zp), dy * (quant_max - zp)) * grad_factor;
  const at::Tensor d_scale = at::where(outside, edge_scale, inside_scale);
  const at::Tensor d_zp = at::where(outside, -dy * scale * grad_factor, at::zeros_like(dy));
  return {dx, d_scale.sum(sum_dims), d_zp.sum(sum_dims)};
}

void check_learnable_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& scale,
                              const at::Tensor& zero_point, int64_t quant_min, int64_t quant_max) {
  for (const at::Tensor* t : {&dy, &x, &scale, &zero_point})
    TORCH_CHECK(t->scalar_type() == at::kFloat, "Expected float tensors for LSQ, got ",
                t->scalar_type());
  TORCH_CHECK(x.numel() == dy.numel(), "`X` and `dY` are not the same size");
  TORCH_CHECK(quant_min <= 0 && quant_max >= 0,
              "`quant_min` should be less than or         equal to `quant_max`, and the "
              "quantization range should include 0.");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_learnable_per_tensor_backward(
    const at::Tensor& dy, const at::Tensor& x, const at::Tensor& scale,
    const at::Tensor& zero_point, int64_t quant_min, int64_t quant_max, double grad_factor) {
  check_learnable_backward(dy, x, scale, zero_point, quant_min, quant_max);
  if (x.numel() <= 0) return {x, scale, zero_point};
  at::Tensor s = first(scale, x, at::kFloat);
  // The backward's zero point: zp + 0.5 clamped, truncated (the CPU's, unlike the forward's).
  at::Tensor zp = (first(zero_point, x, at::kFloat) + 0.5f).clamp_(quant_min, quant_max).trunc_();
  auto [dx, d_scale, d_zp] =
      learnable_grads(dy.reshape(x.sizes()), x, s.reshape({}), reciprocals(s).reshape({}),
                      zp.reshape({}), quant_min, quant_max, grad_factor, {});
  return {dx, d_scale.reshape({1}).to(scale.device()), d_zp.reshape({1}).to(zero_point.device())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_learnable_per_channel_backward(
    const at::Tensor& dy, const at::Tensor& x, const at::Tensor& scale,
    const at::Tensor& zero_point, int64_t axis, int64_t quant_min, int64_t quant_max,
    double grad_factor) {
  check_learnable_backward(dy, x, scale, zero_point, quant_min, quant_max);
  TORCH_CHECK(axis >= 0 && axis < x.dim(),
              "`axis` must be between 0 and number of dimensions of input");
  TORCH_CHECK(scale.numel() == x.size(axis) && zero_point.numel() == x.size(axis),
              "dimensions of scale and zero-point are not consistent with input tensor");
  if (x.numel() <= 0) return {x, scale, zero_point};
  std::vector<int64_t> shape(x.dim(), 1), others;
  shape[axis] = x.size(axis);
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != axis) others.push_back(d);
  at::Tensor s = qparam_on_device(scale, x, at::kFloat);
  at::Tensor zp = qparam_on_device(zero_point, x, at::kFloat).round().clamp_(quant_min, quant_max);
  auto [dx, d_scale, d_zp] =
      learnable_grads(dy.reshape(x.sizes()), x, s.reshape(shape), reciprocals(s).reshape(shape),
                      zp.reshape(shape), quant_min, quant_max, grad_factor, others);
  return {dx, d_scale.reshape(scale.sizes()), d_zp.reshape(zero_point.sizes())};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fake_quantize_per_tensor_affine_cachemask", TORCH_FN(vk_per_tensor_cachemask));
  m.impl("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
         TORCH_FN(vk_per_tensor_cachemask_tensor_qparams));
  m.impl("fake_quantize_per_channel_affine_cachemask", TORCH_FN(vk_per_channel_cachemask));
  m.impl("_fused_moving_avg_obs_fq_helper", TORCH_FN(vk_fused_moving_avg_obs_fq_helper));
  m.impl("_fake_quantize_learnable_per_tensor_affine", TORCH_FN(vk_learnable_per_tensor));
  m.impl("_fake_quantize_learnable_per_tensor_affine_backward",
         TORCH_FN(vk_learnable_per_tensor_backward));
  m.impl("_fake_quantize_learnable_per_channel_affine", TORCH_FN(vk_learnable_per_channel));
  m.impl("_fake_quantize_learnable_per_channel_affine_backward",
         TORCH_FN(vk_learnable_per_channel_backward));
}

}  // namespace vkml_aten
