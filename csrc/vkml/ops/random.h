#pragma once
// Counter-based random numbers (Philox4x32-10): element i of a call draws from
// counter (i, offset), key seed, so results do not depend on the GPU or the
// launch shape, and the same (seed, offset) gives the same numbers.
#include <cstdint>
#include <span>

#include "vkml/core/dtype.h"
#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/random_push.h"
#include "vkml/shaders/random_sample_push.h"

namespace vkml::ops {

enum class Distribution {
  Uniform = RANDOM_UNIFORM,      // [a, b)
  Normal = RANDOM_NORMAL,        // mean a, std b
  RandInt = RANDOM_RANDINT,      // integers in [a, b)  (uses Scalar::i)
  Bernoulli = RANDOM_BERNOULLI,  // 1 with probability a, else 0
};

// out must be contiguous; dtypes f32, f16, i32, i64, u8/b8 (RandInt/Bernoulli).
void random(Device& dev, const TensorRef& out, Distribution dist, Scalar a, Scalar b, uint64_t seed,
            uint64_t offset);

// Samples drawn by rejection or counting (shaders/random_sample.comp), and the
// reparameterization gradients of Gamma and Beta samples, elementwise over float32
// operands, or float64 ones (in double) on a device with float64 arithmetic.
enum class Sample {
  Gamma = SAMPLE_GAMMA,           // Gamma(a, 1)
  Poisson = SAMPLE_POISSON,       // Poisson(a); a negative or NaN rate is a device error
  Binomial = SAMPLE_BINOMIAL,     // Binomial(count a, probability b)
  GammaGrad = SAMPLE_GAMMA_GRAD,  // d x / d a of the Gamma(a, 1) sample x = b (no draws)
  // d x / d alpha / (1 - x) of the Beta(alpha, total - alpha) sample x = a, with alpha = b
  // and total = c, beta held (no draws)
  DirichletGrad = SAMPLE_DIRICHLET_GRAD
};

// How many operands a kind reads: 1, 2 or 3.
size_t sample_operands(Sample kind);

// out and the operands (a, b, c in order, as many as the kind reads) are contiguous
// tensors of one numel and one dtype, float32 or float64.
void sample(Device& dev, const TensorRef& out, Sample kind, std::span<const TensorRef> operands,
            uint64_t seed, uint64_t offset);

}  // namespace vkml::ops
