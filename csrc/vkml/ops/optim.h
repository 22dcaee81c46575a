#pragma once
// Fused optimizer steps: one dispatch updates every parameter of a list.
#include <cstdint>
#include <vector>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/optim_push.h"

namespace vkml::ops {

enum class OptimRule {
  adam = OPTIM_ADAM,
  adamw = OPTIM_ADAMW,
  sgd = OPTIM_SGD,
  adagrad = OPTIM_ADAGRAD
};

// One contiguous parameter and its same-sized, same-dtype companions. Adam:
// state0 = exp_avg, state1 = exp_avg_sq, state2 = max_exp_avg_sq (amsgrad
// only), step = address of its float32 step count. SGD: state0 = momentum
// buffer, or 0 without momentum. Adagrad: state0 = state_sum, step as Adam's.
struct OptimParam {
  uint64_t param = 0, grad = 0, state0 = 0, state1 = 0, state2 = 0, step = 0;
  int64_t numel = 0;
};

struct OptimHyper {
  double lr = 0;
  uint64_t lr_tensor = 0;  // scalar read on the device instead of lr (float64 for f64 params)
  double beta1 = 0.9, beta2 = 0.999;  // SGD: momentum, dampening; Adagrad: lr_decay
  double weight_decay = 0, eps = 1e-8;
  bool amsgrad = false, maximize = false, nesterov = false, first_step = false;
  uint64_t grad_scale = 0;  // float32 scalars, or 0
  uint64_t found_inf = 0;
};

// All params share `dtype` (f32, f16, bf16, or f64 on a device with shaderFloat64).
void fused_optimizer_step(Device& dev, OptimRule rule, DType dtype,
                          const std::vector<OptimParam>& params, const OptimHyper& h);

}  // namespace vkml::ops
