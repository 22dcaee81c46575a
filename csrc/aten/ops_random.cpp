// In-place random fills on the device (rand, randn, randint, normal_,
// uniform_, bernoulli_, dropout build on these) from the Philox generator, and
// multinomial sampling built on them.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/DistributionsHelper.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>

#include "fallback.h"
#include "generator.h"
#include "op_helpers.h"
#include "value_bounds.h"
#include "vkml/ops/random.h"
#include "vkml/ops/value_check.h"
#include "vkml/shaders/device_error.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::Distribution;

bool random_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble ||
         t == at::kInt || t == at::kLong || t == at::kByte || t == at::kBool;
}

// Generates into self (any layout, through a contiguous temporary if needed).
at::Tensor& generate(at::Tensor& self, Distribution dist, vkml::Scalar a, vkml::Scalar b,
                     const std::optional<at::Generator>& gen) {
  if (self.numel() == 0) return self;
  // An expanded self would get one of its draws per element: the CPU raises.
  at::assert_no_internal_overlap(self);
  const at::ScalarType t = self.scalar_type();
  if (t == at::kChar || t == at::kShort || t == at::kUInt16 || t == at::kUInt32 ||
      t == at::kUInt64) {
    // Drawn in the same range into a wider signed integer, which holds every value asked
    // for (uint64 draws stay below 2^63, as the range's bounds are int64).
    const bool narrow = t == at::kChar || t == at::kShort || t == at::kUInt16;
    at::Tensor wide = at::empty(self.sizes(), self.options().dtype(narrow ? at::kInt : at::kLong));
    generate(wide, dist, a, b, gen);
    return self.copy_(wide);
  }
  TORCH_CHECK_NOT_IMPLEMENTED(random_dtype(self.scalar_type()),
                              "random numbers on vkml do not support ", self.scalar_type(), " yet");
  TORCH_CHECK_NOT_IMPLEMENTED(
      self.scalar_type() != at::kDouble || vkml_device(self).info().supports_fp64,
      "random numbers on vkml: ", vkml_device(self).info().name, " has no float64 arithmetic");
  const auto [seed, offset] = get_generator(gen, self.device().index())->take_draw();
  at::Tensor target = self.is_contiguous() ? self : at::empty(self.sizes(), self.options());
  // Draws fill memory in order: flat, so that tensors of any number of dims are filled.
  const at::Tensor flat = target.view({-1});
  guarded([&] { vkml::ops::random(vkml_device(flat), ref(flat), dist, a, b, seed, offset); });
  if (dist == Distribution::RandInt) note_values(target, a.i, b.i - 1);
  if (!target.is_same(self)) self.copy_(target);
  return self;
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  if (self.is_complex()) {  // each part uniform in [from, to), as ATen draws complex values
    at::Tensor parts = at::view_as_real(self);
    generate(parts, Distribution::Uniform, vkml::Scalar::of(from), vkml::Scalar::of(to), gen);
    return self;
  }
  return generate(self, Distribution::Uniform, vkml::Scalar::of(from), vkml::Scalar::of(to), gen);
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {  // each part normal with std / sqrt(2), as ATen draws them
    at::Tensor parts = at::view_as_real(self);
    generate(parts, Distribution::Normal, vkml::Scalar::of(mean),
             vkml::Scalar::of(std / std::sqrt(2.0)), gen);
    return self;
  }
  return generate(self, Distribution::Normal, vkml::Scalar::of(mean), vkml::Scalar::of(std), gen);
}

// The CPU's bounds check of random_(from, to) for the small integer dtypes, in its words
// (the C++ type's name): their values would wrap when drawn wider.
void check_random_bounds(at::ScalarType t, int64_t from, int64_t to) {
  int64_t lo = 0, hi = 0;
  const char* name = nullptr;
  switch (t) {
    case at::kByte:
      lo = 0, hi = 255, name = "unsigned char";
      break;
    case at::kChar:
      lo = -128, hi = 127, name = "signed char";
      break;
    case at::kShort:
      lo = -32768, hi = 32767, name = "short int";
      break;
    case at::kInt:
      lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
      name = "int";
      break;
    case at::kUInt16:
      lo = 0, hi = 65535, name = "short unsigned int";
      break;
    case at::kUInt32:
      lo = 0, hi = std::numeric_limits<uint32_t>::max(), name = "unsigned int";
      break;
    case at::kUInt64:
      lo = 0, hi = std::numeric_limits<int64_t>::max(), name = "long unsigned int";
      break;
    default:
      return;
  }
  TORCH_CHECK(from >= lo && from <= hi, "from is out of bounds for ", name);
  TORCH_CHECK(to - 1 >= lo && to - 1 <= hi, "to - 1 is out of bounds for ", name);
}

// One past the largest value random_() draws for a dtype, as PyTorch's: the dtype's
// maximum for integers, 2^digits for floats (every integer up to it is exact).
int64_t random_top(at::ScalarType t) {
  switch (t) {
    case at::kLong:
    case at::kUInt64:
      return std::numeric_limits<int64_t>::max();
    case at::kInt:
      return int64_t(1) << 31;
    case at::kUInt32:
      return int64_t(1) << 32;
    case at::kUInt16:
      return int64_t(1) << 16;
    case at::kShort:
      return int64_t(1) << 15;
    case at::kChar:
      return int64_t(1) << 7;
    case at::kByte:
      return 256;
    case at::kBool:
      return 2;
    case at::kHalf:
      return (int64_t(1) << 11) + 1;
    case at::kBFloat16:
      return (int64_t(1) << 8) + 1;
    case at::kDouble:
      return (int64_t(1) << 53) + 1;
    default:
      return (int64_t(1) << 24) + 1;
  }
}

at::Tensor& random_from_to(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                           std::optional<at::Generator> gen) {
  // [from, largest value of the dtype] without a `to`: PyTorch's random_(from, None).
  const int64_t hi = to.value_or(random_top(self.scalar_type()));
  TORCH_CHECK(from < hi, "random_ expects 'from' to be less than 'to', but got from=", from,
              " >= to=", hi);
  check_random_bounds(self.scalar_type(), from, hi);
  return generate(self, Distribution::RandInt, vkml::Scalar::of_int(from), vkml::Scalar::of_int(hi),
                  gen);
}
at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from_to(self, 0, to, gen);
}
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  return random_from_to(self, 0, random_top(self.scalar_type()), gen);
}

at::Tensor& bernoulli_float(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  return generate(self, Distribution::Bernoulli, vkml::Scalar::of(p), vkml::Scalar::of(0), gen);
}

// bernoulli_ with a probability tensor (torch.bernoulli(p)): uniform draws
// compared with p broadcast to self's shape.
at::Tensor& bernoulli_tensor(at::Tensor& self, const at::Tensor& p,
                             std::optional<at::Generator> gen) {
  if (self.numel() == 0) return self;
  at::assert_no_internal_overlap(self);
  at::Tensor u = at::empty(self.sizes(), self.options().dtype(at::kFloat));
  uniform_(u, 0.0, 1.0, gen);
  self.copy_(u.lt(p.expand(self.sizes())));
  return self;
}

// Dropout: mask ~ Bernoulli(1 - p), out = input * mask / (1 - p).
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  if (!train.has_value() || !*train || p == 0) {
    return {input.clone(), at::ones(input.sizes(), input.options().dtype(at::kBool))};
  }
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  at::Tensor mask = at::empty(input.sizes(), input.options().dtype(at::kBool));
  bernoulli_float(mask, 1.0 - p, std::nullopt);
  double scale = p == 1 ? 0.0 : 1.0 / (1.0 - p);
  return {input * mask * scale, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  return grad * mask * scale;
}

// Other distributions transform uniform or normal draws with native ops.
// A float32 scratch holds the draws for integer outputs (geometric_).
at::Tensor& exponential_(at::Tensor& self, double lambd, std::optional<at::Generator> gen) {
  TORCH_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  uniform_(self, 0.0, 1.0, gen);
  return self.neg_().log1p_().mul_(-1.0 / lambd);  // -log(1 - u) / lambda
}
at::Tensor& cauchy_(at::Tensor& self, double median, double sigma,
                    std::optional<at::Generator> gen) {
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  uniform_(self, 0.0, 1.0, gen);
  return self.sub_(0.5).mul_(M_PI).tan_().mul_(sigma).add_(median);
}
at::Tensor& log_normal_(at::Tensor& self, double mean, double std,
                        std::optional<at::Generator> gen) {
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  return normal_(self, mean, std, gen).exp_();
}
at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  at::Tensor u = at::empty(self.sizes(), self.options().dtype(at::kFloat));
  uniform_(u, 0.0, 1.0, gen);
  // Trials until the first success: ceil(log(1 - u) / log(1 - p)), at least 1.
  self.copy_(u.neg_().log1p_().div_(std::log1p(-p)).ceil_().clamp_min_(1));
  return self;
}

at::Tensor draws(at::IntArrayRef shape, const at::TensorOptions& opts,
                 std::optional<at::Generator> gen) {
  at::Tensor out = at::empty(shape, opts);
  normal_(out, 0.0, 1.0, gen);
  return out;
}
at::Tensor normal_tf(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return draws(mean.sizes(), mean.options(), gen).mul_(std).add_(mean);
}
at::Tensor normal_ft(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return draws(std.sizes(), std.options(), gen).mul_(std).add_(mean);
}
at::Tensor normal_tt(const at::Tensor& mean, const at::Tensor& std,
                     std::optional<at::Generator> gen) {
  auto shape = at::infer_size(mean.sizes(), std.sizes());
  return draws(shape, mean.options(), gen).mul_(std).add_(mean);
}

// multinomial. Without replacement (and for one sample) the CPU's own method:
// the top n of p / q with q ~ Exp(1) (the Gumbel-max trick). With replacement:
// uniform draws binary-searched in the normalized cumulative distribution
// (first bucket whose cumulative probability reaches the draw; the last is 1).
at::Tensor& multinomial_out(const at::Tensor& self, int64_t n_sample, bool with_replacement,
                            std::optional<at::Generator> gen, at::Tensor& result) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(
      at::isFloatingType(self.scalar_type()),
      "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(result.scalar_type() == at::kLong,
              "multinomial expects Long tensor out, got: ", result.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  int64_t n_categories = self.size(-1);
  TORCH_CHECK(with_replacement || n_sample <= n_categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(n_categories <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  at::Tensor p = self.dim() == 1 ? self.unsqueeze(0) : self;
  p = p.scalar_type() == at::kFloat ? p : p.to(at::kFloat);
  int64_t rows = p.size(0);
  std::vector<int64_t> shape =
      self.dim() == 1 ? std::vector<int64_t>{n_sample} : std::vector<int64_t>{rows, n_sample};
  check_out_device(result);
  at::native::resize_output(result, shape);
  if (rows == 0) return result;
  // The CPU's validity checks, made on the device: a failure is raised at the next
  // read of the device, with the CPU's message, and costs no wait here.
  {
    at::Tensor probs = p.contiguous();
    at::Tensor sums = probs.sum(-1);
    vkml::Device& dev = vkml_device(p);
    guarded([&] {
      vkml::ops::check_float_values(dev, ref(probs), false, DEVICE_ERROR_MULTINOMIAL_PROBABILITY);
      vkml::ops::check_float_values(dev, ref(sums), true, DEVICE_ERROR_MULTINOMIAL_SUM);
    });
  }
  at::Tensor samples;
  if (!with_replacement || n_sample == 1) {
    at::Tensor q = at::empty(p.sizes(), p.options());
    exponential_(q, 1.0, gen);
    q = p / q;
    samples = n_sample == 1 ? q.argmax(-1, /*keepdim=*/true) : std::get<1>(q.topk(n_sample));
  } else {
    at::Tensor cdf = p.cumsum(-1).div_(p.sum(-1, /*keepdim=*/true));
    cdf.select(-1, n_categories - 1).fill_(1.0);
    at::Tensor u = at::empty({rows, n_sample}, p.options());
    uniform_(u, 0.0, 1.0, gen);
    samples = at::searchsorted(cdf, u);
  }
  result.copy_(samples.reshape(shape));
  return result;
}
at::Tensor multinomial(const at::Tensor& self, int64_t n_sample, bool with_replacement,
                       std::optional<at::Generator> gen) {
  at::Tensor result = at::empty({0}, self.options().dtype(at::kLong));
  return multinomial_out(self, n_sample, with_replacement, gen, result);
}

// Samples of torch.distributions drawn by rejection or counting (Gamma, Poisson,
// Binomial; Dirichlet from Gamma), and the reparameterization gradients of Gamma and
// Beta (Dirichlet). The kernel computes in float32: float16 and bfloat16 operands are
// converted as CUDA computes them; float64 in double where the device has float64
// arithmetic, else on the counted CPU route.
using vkml::ops::Sample;

// The operands broadcast to one shape, in the kernel's dtype (float64 for float64, else
// float32); the result in the first's dtype.
at::Tensor sample(Sample kind, std::vector<at::Tensor> operands,
                  const std::optional<at::Generator>& gen) {
  const at::ScalarType dtype = operands[0].scalar_type();
  const at::ScalarType compute = dtype == at::kDouble ? at::kDouble : at::kFloat;
  std::vector<int64_t> shape = operands[0].sizes().vec();
  for (const at::Tensor& t : operands) shape = at::infer_size(shape, t.sizes());
  std::vector<vkml::TensorRef> refs;
  for (at::Tensor& t : operands) {
    t = t.expand(shape).to(compute).contiguous();
    refs.push_back(ref(t));
  }
  at::Tensor out = at::empty(shape, operands[0].options());
  if (out.numel() == 0) return out.to(dtype);
  uint64_t seed = 0, offset = 0;
  if (kind != Sample::GammaGrad && kind != Sample::DirichletGrad) {
    const auto draw = get_generator(gen, out.device().index())->take_draw();
    seed = draw.seed;
    offset = draw.offset;
  }
  guarded([&] { vkml::ops::sample(vkml_device(out), ref(out), kind, refs, seed, offset); });
  return out.scalar_type() == dtype ? out : out.to(dtype);
}

void check_floating(const at::Tensor& t, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(t.scalar_type()), "\"", kernel,
                              "\" not implemented for '", t.scalar_type(), "'");
}

at::Tensor standard_gamma(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_floating(self, "gamma_cpu");
  if (float64_without_arithmetic(self)) return cpu_route<at::_ops::_standard_gamma>(self, gen);
  return sample(Sample::Gamma, {self}, gen);
}

at::Tensor standard_gamma_grad(const at::Tensor& self, const at::Tensor& output) {
  check_floating(self, "_standard_gamma_grad_cpu");
  TORCH_CHECK(output.scalar_type() == self.scalar_type(), "Found dtype ", output.scalar_type(),
              " but expected ", self.scalar_type());
  if (float64_without_arithmetic(self))
    return cpu_route<at::_ops::_standard_gamma_grad>(self, output);
  return sample(Sample::GammaGrad, {self, output}, std::nullopt);
}

// Gamma draws normalized along the last dimension, as CUDA draws Dirichlet samples;
// each component at least the smallest normal number of the dtype, as the CPU's.
at::Tensor sample_dirichlet(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_floating(self, "dirichlet");
  if (float64_without_arithmetic(self)) return cpu_route<at::_ops::_sample_dirichlet>(self, gen);
  const bool f64 = self.scalar_type() == at::kDouble;
  at::Tensor gamma = sample(Sample::Gamma, {self.to(f64 ? at::kDouble : at::kFloat)}, gen);
  at::Tensor out = gamma / gamma.sum(-1, /*keepdim=*/true);
  out.clamp_min_(f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min());
  return out.to(self.scalar_type());
}

// Dirichlet.rsample's backward: d x / d alpha / (1 - x) of a Beta(alpha, total - alpha)
// sample x, beta held.
at::Tensor dirichlet_grad(const at::Tensor& x, const at::Tensor& alpha, const at::Tensor& total) {
  check_floating(x, "_dirichlet_grad_cpu");
  for (const at::Tensor* t : {&alpha, &total}) {
    TORCH_CHECK(t->scalar_type() == x.scalar_type(), "Found dtype ", t->scalar_type(),
                " but expected ", x.scalar_type());
  }
  if (float64_without_arithmetic(x)) return cpu_route<at::_ops::_dirichlet_grad>(x, alpha, total);
  return sample(Sample::DirichletGrad, {x, alpha, total}, std::nullopt);
}

at::Tensor poisson(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_floating(self, "poisson_cpu");
  if (float64_without_arithmetic(self)) return cpu_route<at::_ops::poisson>(self, gen);
  return sample(Sample::Poisson, {self}, gen);
}

at::Tensor binomial(const at::Tensor& count, const at::Tensor& prob,
                    std::optional<at::Generator> gen) {
  TORCH_CHECK_VALUE(
      at::isFloatingType(count.scalar_type()),
      "binomial only supports floating-point dtypes for count, got: ", count.scalar_type());
  TORCH_CHECK_VALUE(
      at::isFloatingType(prob.scalar_type()),
      "binomial only supports floating-point dtypes for prob, got: ", prob.scalar_type());
  TORCH_CHECK(count.scalar_type() == prob.scalar_type(), "Found dtype ", prob.scalar_type(),
              " but expected ", count.scalar_type());
  if (float64_without_arithmetic(count)) return cpu_route<at::_ops::binomial>(count, prob, gen);
  return sample(Sample::Binomial, {count, prob}, gen);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_standard_gamma", TORCH_FN(standard_gamma));
  m.impl("_standard_gamma_grad", TORCH_FN(standard_gamma_grad));
  m.impl("_sample_dirichlet", TORCH_FN(sample_dirichlet));
  m.impl("_dirichlet_grad", TORCH_FN(dirichlet_grad));
  m.impl("poisson", TORCH_FN(poisson));
  m.impl("binomial", TORCH_FN(binomial));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("cauchy_", TORCH_FN(cauchy_));
  m.impl("log_normal_", TORCH_FN(log_normal_));
  m.impl("geometric_", TORCH_FN(geometric_));
  m.impl("normal.Tensor_float", TORCH_FN(normal_tf));
  m.impl("normal.float_Tensor", TORCH_FN(normal_ft));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tt));
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("random_.from", TORCH_FN(random_from_to));
  m.impl("random_.to", TORCH_FN(random_to));
  m.impl("random_", TORCH_FN(random_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_float));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor));
  m.impl("multinomial", TORCH_FN(multinomial));
  m.impl("multinomial.out", TORCH_FN(multinomial_out));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

}  // namespace vkml_aten
