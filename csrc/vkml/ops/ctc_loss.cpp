#include "vkml/ops/ctc_loss.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/ctc_loss_push.h"

namespace vkml::ops {

namespace {

using ctc_detail::Push;

int64_t positions(const CtcLossArgs& a) { return 2 * a.max_target_length + 1; }

// The beta rows are reals, the label lists int32: the lists start 8-aligned after them.
int64_t beta_bytes(const CtcLossArgs& a) {
  return (a.n * 3 * positions(a) * int64_t(itemsize(a.dtype)) + 7) / 8 * 8;
}

Push make_push(Device& dev, const CtcLossArgs& a) {
  VKML_CHECK_ARG(a.dtype == DType::f32 || a.dtype == DType::f64,
                 "ctc_loss: only float32 and float64 are supported");
  VKML_CHECK_ARG(a.dtype != DType::f64 || dev.info().supports_fp64,
                 "ctc_loss: float64 needs a device with shaderFloat64");
  VKML_CHECK_ARG(a.t >= 0 && a.n >= 0 && a.c > 0 && a.max_target_length >= 0, "ctc_loss: bad size");
  VKML_CHECK_ARG(a.blank >= 0 && a.blank < a.c, "ctc_loss: blank must be in label range");
  const int64_t lp_extent = 1 + std::max<int64_t>(a.t - 1, 0) * a.lp_strides[0] +
                            std::max<int64_t>(a.n - 1, 0) * a.lp_strides[1] +
                            (a.c - 1) * a.lp_strides[2];
  check_32bit_indexing(a.t * a.n * a.c, lp_extent, "ctc_loss");
  check_32bit_indexing(a.n * a.t * positions(a), a.n * a.t * positions(a), "ctc_loss");
  check_32bit_indexing(a.targets_numel, a.targets_numel, "ctc_loss");
  Push p{};
  p.log_probs = a.log_probs;
  p.targets = a.targets;
  p.lengths = a.lengths;
  p.log_alpha = a.log_alpha;
  p.nll = a.nll;
  p.t_len = uint32_t(a.t);
  p.n = uint32_t(a.n);
  p.c = uint32_t(a.c);
  p.l = uint32_t(positions(a));
  p.lp_stride_t = uint32_t(a.lp_strides[0]);
  p.lp_stride_n = uint32_t(a.lp_strides[1]);
  p.lp_stride_c = uint32_t(a.lp_strides[2]);
  p.blank = uint32_t(a.blank);
  return p;
}

// Steps end with a workgroup barrier, so idle threads cost every step: short label
// sequences (and, backward, few labels) get 64 threads.
uint32_t workgroup(Device& dev, int64_t width) {
  uint32_t wg = width <= 64 ? 64 : 256;
  while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  return wg;
}

VkPipeline pipeline(Device& dev, DType dtype, int mode, uint32_t wg) {
  return dev.pipelines().get(shaders::ctc_loss(dtype), {mode, int32_t(wg)});
}

Span log_probs_span(const CtcLossArgs& a) {
  const int64_t sizes[3] = {a.t, a.n, a.c};
  return span_of(a.log_probs, itemsize(a.dtype), 3, sizes, a.lp_strides);
}

}  // namespace

void ctc_loss_forward(Device& dev, const CtcLossArgs& a) {
  Push p = make_push(dev, a);
  if (a.n == 0) return;
  const size_t is = itemsize(a.dtype);
  const uint32_t wg = workgroup(dev, positions(a));
  Access acc;
  acc.read(log_probs_span(a));
  acc.read(span_elems(a.targets, a.targets_numel, 8));
  acc.read(span_elems(a.lengths, 3 * a.n, 8));
  acc.update(span_elems(a.log_alpha, a.n * a.t * positions(a), is));  // read back step by step
  acc.write(span_elems(a.nll, a.n, is));
  dispatch_groups(dev, pipeline(dev, a.dtype, CTC_FORWARD, wg), &p, sizeof(p), uint64_t(a.n), &acc);
}

size_t ctc_loss_backward_scratch_bytes(const CtcLossArgs& a) {
  return size_t(beta_bytes(a) + a.n * (a.c + a.max_target_length) * 4);
}

void ctc_loss_backward(Device& dev, const CtcLossArgs& a, uint64_t grad_out,
                       int64_t grad_out_stride, bool zero_infinity, uint64_t scratch,
                       uint64_t grad) {
  Push p = make_push(dev, a);
  if (a.n == 0 || a.t == 0) return;
  VKML_CHECK_ARG(grad_out_stride >= 0, "ctc_loss_backward: negative grad stride");
  check_32bit_indexing(a.n, 1 + (a.n - 1) * grad_out_stride, "ctc_loss_backward");
  p.grad_out = grad_out;
  p.grad = grad;
  p.beta = scratch;
  p.groups = scratch + uint64_t(beta_bytes(a));
  p.grad_out_stride = uint32_t(grad_out_stride);
  p.flags = zero_infinity ? CTC_ZERO_INFINITY : 0u;
  const size_t is = itemsize(a.dtype);
  const uint32_t wg = workgroup(dev, std::max(positions(a), a.c));
  Access acc;
  acc.read(log_probs_span(a));
  acc.read(span_elems(a.targets, a.targets_numel, 8));
  acc.read(span_elems(a.lengths, 3 * a.n, 8));
  acc.read(span_elems(a.log_alpha, a.n * a.t * positions(a), is));
  acc.read(span_elems(a.nll, a.n, is));
  acc.read(span_elems(grad_out, 1 + (a.n - 1) * grad_out_stride, is));
  acc.update(Span{scratch, scratch + ctc_loss_backward_scratch_bytes(a)});
  acc.write(span_elems(grad, a.t * a.n * a.c, is));
  dispatch_groups(dev, pipeline(dev, a.dtype, CTC_BACKWARD, wg), &p, sizeof(p), uint64_t(a.n),
                  &acc);
}

}  // namespace vkml::ops
