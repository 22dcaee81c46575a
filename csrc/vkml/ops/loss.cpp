#include "vkml/ops/loss.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/margin_loss_push.h"
#include "vkml/shaders/nll_loss_push.h"

namespace vkml::ops {

namespace {

using Push = nll_loss_detail::Push;

Push make_push(Device& dev, const NllLossArgs& a) {
  check_float_dtype(dev, a.dtype, "nll_loss");
  VKML_CHECK_ARG(a.n >= 0 && a.c >= 0, "nll_loss: negative size");
  check_32bit_indexing(a.n * a.c, a.n * a.c, "nll_loss");
  Push p{};
  p.scores = a.input;
  p.target = a.target;
  p.loss_out = a.output;
  // An absent weight reads a stand-in of its dtype and size (the input; the backward
  // has grad_input): a driver may run a load whose branch is not taken (Mesa 26's
  // lavapipe does, for loads from one address across a subgroup).
  p.weight = a.weight ? a.weight : a.input;
  p.total_weight = a.total_weight;
  p.ignore_index = a.ignore_index;
  p.n = uint32_t(a.n);
  p.c = uint32_t(a.c);
  p.reduction = int32_t(a.reduction);
  p.flags = a.weight ? NLL_LOSS_WEIGHT : 0;
  p.errors = dev.errors().address();
  return p;
}

uint32_t workgroup(Device& dev) {
  uint32_t wg = 256;
  while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  return wg;
}

// What the kernels touch; the output and grad_output are given their longest
// extent ([n], reduction None) whatever the reduction.
Access access_of(const NllLossArgs& a, bool backward, uint64_t grad_output, uint64_t grad_input) {
  const size_t is = itemsize(a.dtype);
  const int64_t out_len = std::max<int64_t>(a.n, 1);
  Access acc;
  acc.read(span_elems(a.target, a.n, 8));
  if (a.weight) acc.read(span_elems(a.weight, a.c, is));
  if (!backward) {
    acc.read(span_elems(a.input, a.n * a.c, is));
    acc.write(span_elems(a.output, out_len, is));
    acc.write(span_elems(a.total_weight, 1, is));
  } else {
    if (a.total_weight) acc.read(span_elems(a.total_weight, 1, is));
    acc.read(span_elems(grad_output, out_len, is));
    acc.write(span_elems(grad_input, a.n * a.c, is));
  }
  return acc;
}

}  // namespace

void nll_loss_forward(Device& dev, const NllLossArgs& a) {
  Push p = make_push(dev, a);
  VKML_CHECK_ARG(a.output && a.total_weight, "nll_loss_forward: output and total_weight needed");
  uint32_t wg = workgroup(dev);
  // One workgroup: it writes total_weight (and the reduced loss) even when n == 0.
  VkPipeline pipeline =
      dev.pipelines().get(shaders::nll_loss(a.dtype), {NLL_LOSS_FORWARD, int32_t(wg)});
  Access acc = access_of(a, false, 0, 0);
  dispatch_groups(dev, pipeline, &p, sizeof(p), 1, &acc);
}

void nll_loss_backward(Device& dev, const NllLossArgs& a, uint64_t grad_output,
                       uint64_t grad_input) {
  Push p = make_push(dev, a);
  if (a.n * a.c == 0) return;
  VKML_CHECK_ARG(a.reduction != Reduction::Mean || a.total_weight,
                 "nll_loss_backward: mean reduction needs total_weight");
  p.grad_output = grad_output;
  p.grad_input = grad_input;
  if (!a.weight) p.weight = grad_input;
  if (!a.total_weight) p.total_weight = grad_output;  // read under mean reduction only
  uint32_t wg = workgroup(dev);
  VkPipeline pipeline =
      dev.pipelines().get(shaders::nll_loss(a.dtype), {NLL_LOSS_BACKWARD, int32_t(wg)});
  Access acc = access_of(a, true, grad_output, grad_input);
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(a.n * a.c), wg, &acc);
}

}  // namespace vkml::ops

namespace vkml::ops {

namespace {

using MarginPush = margin_loss_detail::MarginPush;

void margin_launch(Device& dev, const MarginLossArgs& a, bool backward, uint64_t loss,
                   uint64_t grad_fac, uint64_t grad_in) {
  VKML_CHECK_ARG(a.n >= 0 && a.c > 0, "margin loss: bad size");
  VKML_CHECK_ARG(a.kind != MarginLoss::Multi || a.p == 1 || a.p == 2,
                 "multi_margin_loss: only p == 1 and p == 2 supported");
  check_32bit_indexing(a.n * a.c, a.n * a.c, "margin loss");
  if (a.n == 0) return;
  MarginPush p{.x = a.x,
               .target = a.target,
               .weight = a.weight,
               .loss = loss,
               .grad_fac = grad_fac,
               .grad_in = grad_in,
               .is_target = a.is_target,
               .n = uint32_t(a.n),
               .c = uint32_t(a.c),
               .margin = a.margin,
               .p = uint32_t(a.p),
               .flags = a.weight ? MARGIN_LOSS_WEIGHT : 0u};
  const bool multi_label = a.kind == MarginLoss::MultiLabel;
  const int mode =
      multi_label ? (backward ? MARGIN_LOSS_MULTILABEL_BACKWARD : MARGIN_LOSS_MULTILABEL_FORWARD)
                  : (backward ? MARGIN_LOSS_MULTI_BACKWARD : MARGIN_LOSS_MULTI_FORWARD);
  VkPipeline pipeline = dev.pipelines().get(Shader::margin_loss, {mode});
  const int64_t nc = a.n * a.c;
  Access access;
  access.read(span_elems(a.x, nc, sizeof(float)));
  access.read(span_elems(a.target, multi_label ? nc : a.n, sizeof(int64_t)));
  if (a.weight) access.read(span_elems(a.weight, a.c, sizeof(float)));
  const Span is_target = span_elems(a.is_target, multi_label ? nc : 0, sizeof(float));
  if (backward) {
    access.read(span_elems(grad_fac, a.n, sizeof(float)));
    access.read(is_target);
    access.update(span_elems(grad_in, nc, sizeof(float)));  // MultiLabel accumulates into it
  } else {
    access.write(span_elems(loss, a.n, sizeof(float)));
    access.write(is_target);  // written by forward for the backward
  }
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(a.n), MARGIN_LOSS_WG, &access);
}

}  // namespace

void margin_loss_forward(Device& dev, const MarginLossArgs& a, uint64_t loss) {
  margin_launch(dev, a, false, loss, 0, 0);
}

void margin_loss_backward(Device& dev, const MarginLossArgs& a, uint64_t grad_fac,
                          uint64_t grad_in) {
  margin_launch(dev, a, true, 0, grad_fac, grad_in);
}

}  // namespace vkml::ops
