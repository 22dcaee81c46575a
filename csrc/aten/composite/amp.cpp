// GradScaler's two ops on the device, as compositions of vkml kernels: nothing is
// read back, so a scaled step never waits for the GPU (the CPU fallback these ops
// took before read every gradient back and wrote it again).
//
// _amp_foreach_non_finite_check_and_unscale_: found_inf becomes 1 if any gradient
// holds an inf or NaN (checked before the multiply, as CUDA's kernel does), and every
// gradient is multiplied by inv_scale in place (one batched dispatch per dtype).
// _amp_update_scale_: CUDA's rule. After a step with found_inf the scale backs off and
// the tracker restarts; after growth_interval clean steps in a row it grows, unless
// that would overflow fp32.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/vkml_tensor.h"

namespace vkml_aten {
namespace {

void check_scalar_float(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.numel() == 1, name, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == at::kFloat, name, " must be a float tensor.");
}

void vk_non_finite_check_and_unscale_(at::TensorList grads, at::Tensor& found_inf,
                                      const at::Tensor& inv_scale) {
  check_scalar_float(inv_scale, "inv_scale");
  check_scalar_float(found_inf, "found_inf");
  TORCH_CHECK(inv_scale.device() == found_inf.device(),
              "inv_scale and found_inf must be on the same device.");
  if (grads.empty()) return;
  std::vector<at::Tensor> finite;
  finite.reserve(grads.size());
  for (const at::Tensor& g : grads) {
    TORCH_CHECK(g.device() == found_inf.device(),
                "all scaled grads must be on the same device as found_inf, got ", g.device(),
                " and ", found_inf.device());
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), "all scaled grads must be floating point");
    TORCH_CHECK(g.layout() == at::kStrided, "one of scaled_grads was not a strided tensor.");
    finite.push_back(g.numel() ? at::isfinite(g).all()
                               : at::ones({}, g.options().dtype(at::kBool)));
  }
  at::Tensor any_bad = at::logical_not(at::stack(finite).all()).to(at::kFloat);
  found_inf.copy_(at::maximum(found_inf.reshape({}), any_bad).reshape(found_inf.sizes()));
  // Grouped by dtype, as the multiply of a foreach list needs one dtype per dispatch.
  std::map<at::ScalarType, std::vector<at::Tensor>> by_dtype;
  for (const at::Tensor& g : grads) by_dtype[g.scalar_type()].push_back(g);
  for (auto& [dtype, list] : by_dtype) at::_foreach_mul_(list, inv_scale.reshape({}));
}

at::Tensor& vk_update_scale_(at::Tensor& scale, at::Tensor& growth_tracker,
                             const at::Tensor& found_inf, double growth_factor,
                             double backoff_factor, int64_t growth_interval) {
  check_scalar_float(scale, "current_scale");
  check_scalar_float(found_inf, "found_inf");
  TORCH_CHECK(growth_tracker.numel() == 1, "growth_tracker must be a 1-element tensor.");
  TORCH_CHECK(growth_tracker.scalar_type() == at::kInt, "growth_tracker must be an int tensor.");
  const at::Tensor s = scale.reshape({}), tracker = growth_tracker.reshape({});
  const at::Tensor bad = found_inf.reshape({}) != 0;
  const at::Tensor clean_steps = tracker + 1;
  const at::Tensor grow = at::logical_and(at::logical_not(bad), clean_steps == growth_interval);
  const at::Tensor grown = s * growth_factor;
  const at::Tensor new_scale = at::where(
      bad, s * backoff_factor, at::where(at::logical_and(grow, at::isfinite(grown)), grown, s));
  const at::Tensor new_tracker =
      at::where(at::logical_or(bad, grow), at::zeros_like(tracker), clean_steps);
  scale.copy_(new_scale.reshape(scale.sizes()));
  growth_tracker.copy_(new_tracker.reshape(growth_tracker.sizes()));
  return scale;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(vk_non_finite_check_and_unscale_));
  m.impl("_amp_update_scale_", TORCH_FN(vk_update_scale_));
}

}  // namespace vkml_aten
