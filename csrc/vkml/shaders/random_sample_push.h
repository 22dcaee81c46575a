// The push constants of shaders/random_sample.comp, written once for its launcher
// (vkml/ops/random.cpp, C++) and the kernel (GLSL).
#ifndef VKML_RANDOM_SAMPLE_PUSH_H
#define VKML_RANDOM_SAMPLE_PUSH_H

// Threads per workgroup (the kernel's local size).
#define RANDOM_SAMPLE_WG 256

// What the kernel computes (specialization constant 0): vkml::ops::Sample's values.
#define SAMPLE_GAMMA 0       // Gamma(a, 1): torch._standard_gamma
#define SAMPLE_POISSON 1     // Poisson(a): torch.poisson
#define SAMPLE_BINOMIAL 2    // Binomial(count a, probability b): torch.binomial
#define SAMPLE_GAMMA_GRAD 3  // d sample / d a at the sample b: torch._standard_gamma_grad
// The scaled gradient of a Beta(alpha, total - alpha) sample x in alpha (beta held):
// torch._dirichlet_grad(x = a, alpha = b, total = c)
#define SAMPLE_DIRICHLET_GRAD 4

#include "push_block.h"

VKML_CONTRACT_BEGIN(random_sample_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t a;       // parameters, one per output element (float32, or float64)
  uint64_t b;       // a second operand (binomial, the gradients), else a's
  uint64_t c;       // a third (dirichlet_grad), else a's
  uint64_t dst;     // output, in the parameters' dtype
  uint64_t errors;  // the device error record (a negative Poisson rate)
  uint seed_lo, seed_hi, offset_lo, offset_hi;
  uint numel;
VKML_PUSH_END(Push, 5 * 8 + 5 * 4 + 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(random_sample_detail)

#endif
