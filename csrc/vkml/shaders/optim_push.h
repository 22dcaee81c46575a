// The push constants and table record of shaders/optim.comp, written once for its
// launcher (vkml/ops/optim.cpp, C++) and the kernel (GLSL), which reads the bytes as
// laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// The rules are vkml::ops::OptimRule's values (specialization constant 0).
#ifndef VKML_OPTIM_PUSH_H
#define VKML_OPTIM_PUSH_H

#define OPTIM_ADAM 0
#define OPTIM_ADAMW 1
#define OPTIM_SGD 2
#define OPTIM_ADAGRAD 3

// flags
#define OPTIM_AMSGRAD 1u
#define OPTIM_MAXIMIZE 2u
#define OPTIM_NESTEROV 4u
#define OPTIM_FIRST_STEP 8u

// A workgroup updates OPTIM_WG * OPTIM_ITEMS elements of one parameter.
#define OPTIM_WG 256
#define OPTIM_ITEMS 4

#include "push_block.h"

VKML_CONTRACT_BEGIN(optim_detail)

// One parameter, in the table at `table` (scalar layout). Adam: state0 = exp_avg,
// state1 = exp_avg_sq, state2 = max_exp_avg_sq (amsgrad), step = its float32 step
// count. SGD: state0 = momentum buffer (0 without momentum). Adagrad: state0 = state_sum,
// step as Adam's.
struct Record {
  uint64_t param;
  uint64_t grad;
  uint64_t state0;
  uint64_t state1;
  uint64_t state2;
  uint64_t step;
  uint first_block;
  uint numel;
};

VKML_ASSERT_SIZE(Record, 6 * 8 + 2 * 4)
VKML_PUSH_BEGIN(Push)
  uint64_t table;
  uint64_t lr_ptr;      // a learning-rate tensor (float32; float64 for f64), or 0: use lr
  uint64_t grad_scale;  // float32 scalar the grads are divided by (stored back), or 0
  uint64_t found_inf;   // float32 scalar: 1 skips the step, or 0
  // The f64 variant's hyperparameters: the bits of the doubles below (the float
  // variants read the floats, and declare no double type)
  uint64_t lr_bits, beta1_bits, beta2_bits, weight_decay_bits, eps_bits;
  float lr;
  float beta1;  // SGD: momentum; Adagrad: lr_decay
  float beta2;  // SGD: dampening
  float weight_decay;
  float eps;
  uint count;  // records
  uint flags;
VKML_PUSH_END(Push, 9 * 8 + 8 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(optim_detail)

#endif
