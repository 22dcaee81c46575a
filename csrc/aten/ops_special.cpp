// Special functions (torch.special, i0, polygamma, igamma, zeta, orthogonal
// polynomials), frexp, angle, gcd / lcm: elementwise kernels over fp32 (f16 and
// bf16 compute in fp32) with the CPU's algorithms. Float64 inputs have no
// kernel for these (GLSL has no double transcendental functions) and take the
// counted CPU route.
#include <ATen/native/Resize.h>

#include "elementwise_macros.h"
#include "vkml/shaders/op_codes.h"

namespace vkml_aten {
namespace {

const EwOp kI0{OP_I0, "i0", kToFloat};
const EwOp kI0e{OP_I0E, "special_i0e", kToFloat};
const EwOp kI1{OP_I1, "special_i1", kToFloat};
const EwOp kI1e{OP_I1E, "special_i1e", kToFloat};
const EwOp kNdtri{OP_NDTRI, "special_ndtri", kToFloat};
const EwOp kLogNdtr{OP_LOG_NDTR, "special_log_ndtr", kToFloat};
const EwOp kErfcx{OP_ERFCX, "special_erfcx", kToFloat};
const EwOp kAiryAi{OP_AIRY_AI, "special_airy_ai", kToFloat};
const EwOp kBesselJ0{OP_BESSEL_J0, "special_bessel_j0", kToFloat};
const EwOp kBesselJ1{OP_BESSEL_J1, "special_bessel_j1", kToFloat};
const EwOp kBesselY0{OP_BESSEL_Y0, "special_bessel_y0", kToFloat};
const EwOp kBesselY1{OP_BESSEL_Y1, "special_bessel_y1", kToFloat};
const EwOp kModBesselI0{OP_MODIFIED_BESSEL_I0, "special_modified_bessel_i0", kToFloat};
const EwOp kModBesselI1{OP_MODIFIED_BESSEL_I1, "special_modified_bessel_i1", kToFloat};
const EwOp kModBesselK0{OP_MODIFIED_BESSEL_K0, "special_modified_bessel_k0", kToFloat};
const EwOp kModBesselK1{OP_MODIFIED_BESSEL_K1, "special_modified_bessel_k1", kToFloat};
const EwOp kScaledK0{OP_SCALED_MODIFIED_BESSEL_K0, "special_scaled_modified_bessel_k0", kToFloat};
const EwOp kScaledK1{OP_SCALED_MODIFIED_BESSEL_K1, "special_scaled_modified_bessel_k1", kToFloat};
const EwOp kSphericalJ0{OP_SPHERICAL_BESSEL_J0, "special_spherical_bessel_j0", kToFloat};
const EwOp kAngle{OP_ANGLE, "angle", kToFloat};
const EwOp kPolygamma0{OP_DIGAMMA, "polygamma", kToFloat};
const EwOp kTrigamma{OP_TRIGAMMA, "polygamma", kToFloat};
const EwOp kPolygamma{OP_POLYGAMMA, "polygamma", kToFloat};
const EwOp kFrexpMantissa{OP_FREXP_MANTISSA, "frexp"};
const EwOp kFrexpExponent{OP_FREXP_EXPONENT, "frexp"};
const EwOp kZeta{OP_ZETA, "special_zeta", kToFloat};
const EwOp kIgamma{OP_IGAMMA, "igamma_cpu", ResultType::Promote, /*float_only=*/true};
const EwOp kIgammac{OP_IGAMMAC, "igammac_cpu", ResultType::Promote, /*float_only=*/true};
const EwOp kGcd{OP_GCD,          "gcd_cpu", ResultType::Promote, false, /*integral_only=*/true,
                /*no_bool=*/true};
const EwOp kLcm{OP_LCM,          "lcm_cpu", ResultType::Promote, false, /*integral_only=*/true,
                /*no_bool=*/true};
const EwOp kChebT{OP_CHEBYSHEV_T, "special_chebyshev_polynomial_t", kToFloat};
const EwOp kChebU{OP_CHEBYSHEV_U, "special_chebyshev_polynomial_u", kToFloat};
const EwOp kChebV{OP_CHEBYSHEV_V, "special_chebyshev_polynomial_v", kToFloat};
const EwOp kChebW{OP_CHEBYSHEV_W, "special_chebyshev_polynomial_w", kToFloat};
const EwOp kSChebT{OP_SHIFTED_CHEBYSHEV_T, "special_shifted_chebyshev_polynomial_t", kToFloat};
const EwOp kSChebU{OP_SHIFTED_CHEBYSHEV_U, "special_shifted_chebyshev_polynomial_u", kToFloat};
const EwOp kSChebV{OP_SHIFTED_CHEBYSHEV_V, "special_shifted_chebyshev_polynomial_v", kToFloat};
const EwOp kSChebW{OP_SHIFTED_CHEBYSHEV_W, "special_shifted_chebyshev_polynomial_w", kToFloat};
const EwOp kHermiteH{OP_HERMITE_H, "special_hermite_polynomial_h", kToFloat};
const EwOp kHermiteHe{OP_HERMITE_HE, "special_hermite_polynomial_he", kToFloat};
const EwOp kLaguerreL{OP_LAGUERRE_L, "special_laguerre_polynomial_l", kToFloat};
const EwOp kLegendreP{OP_LEGENDRE_P, "special_legendre_polynomial_p", kToFloat};

}  // namespace
}  // namespace vkml_aten

// Functional and out= forms (aten has no in-place form for torch.special ops).
#define VKML_SPECIAL_UNARY(fn, OP)                                          \
  at::Tensor fn(const at::Tensor& a) {                                      \
    if (runs_on_cpu(OP, {a})) return cpu_route<at::_ops::fn>(a);            \
    return elementwise(OP, {a});                                            \
  }                                                                         \
  at::Tensor& fn##_out(const at::Tensor& a, at::Tensor& out) {              \
    if (runs_on_cpu(OP, {a})) return cpu_route<at::_ops::fn##_out>(a, out); \
    elementwise(OP, {a}, out);                                              \
    return out;                                                             \
  }
#define VKML_SPECIAL_BINARY(fn, OP)                                                 \
  at::Tensor fn(const at::Tensor& a, const at::Tensor& b) {                         \
    if (runs_on_cpu(OP, {a, b})) return cpu_route<at::_ops::fn>(a, b);              \
    return elementwise(OP, {a, b});                                                 \
  }                                                                                 \
  at::Tensor& fn##_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) { \
    if (runs_on_cpu(OP, {a, b})) return cpu_route<at::_ops::fn##_out>(a, b, out);   \
    elementwise(OP, {a, b}, out);                                                   \
    return out;                                                                     \
  }
#define VKML_REGISTER_SPECIAL(m, fn) \
  m.impl(#fn, TORCH_FN(fn));         \
  m.impl(#fn ".out", TORCH_FN(fn##_out))

namespace vkml_aten {
namespace {

VKML_UNARY(i0, kI0)
VKML_SPECIAL_UNARY(special_i0e, kI0e)
VKML_SPECIAL_UNARY(special_i1, kI1)
VKML_SPECIAL_UNARY(special_i1e, kI1e)
VKML_SPECIAL_UNARY(special_ndtri, kNdtri)
VKML_SPECIAL_UNARY(special_log_ndtr, kLogNdtr)
VKML_SPECIAL_UNARY(special_erfcx, kErfcx)
VKML_SPECIAL_UNARY(special_airy_ai, kAiryAi)
VKML_SPECIAL_UNARY(special_bessel_j0, kBesselJ0)
VKML_SPECIAL_UNARY(special_bessel_j1, kBesselJ1)
VKML_SPECIAL_UNARY(special_bessel_y0, kBesselY0)
VKML_SPECIAL_UNARY(special_bessel_y1, kBesselY1)
VKML_SPECIAL_UNARY(special_modified_bessel_i0, kModBesselI0)
VKML_SPECIAL_UNARY(special_modified_bessel_i1, kModBesselI1)
VKML_SPECIAL_UNARY(special_modified_bessel_k0, kModBesselK0)
VKML_SPECIAL_UNARY(special_modified_bessel_k1, kModBesselK1)
VKML_SPECIAL_UNARY(special_scaled_modified_bessel_k0, kScaledK0)
VKML_SPECIAL_UNARY(special_scaled_modified_bessel_k1, kScaledK1)
VKML_SPECIAL_UNARY(special_spherical_bessel_j0, kSphericalJ0)
VKML_SPECIAL_UNARY(angle, kAngle)

VKML_SPECIAL_BINARY(special_zeta, kZeta)
VKML_SPECIAL_BINARY(special_chebyshev_polynomial_t, kChebT)
VKML_SPECIAL_BINARY(special_chebyshev_polynomial_u, kChebU)
VKML_SPECIAL_BINARY(special_chebyshev_polynomial_v, kChebV)
VKML_SPECIAL_BINARY(special_chebyshev_polynomial_w, kChebW)
VKML_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_t, kSChebT)
VKML_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_u, kSChebU)
VKML_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_v, kSChebV)
VKML_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_w, kSChebW)
VKML_SPECIAL_BINARY(special_hermite_polynomial_h, kHermiteH)
VKML_SPECIAL_BINARY(special_hermite_polynomial_he, kHermiteHe)
VKML_SPECIAL_BINARY(special_laguerre_polynomial_l, kLaguerreL)
VKML_SPECIAL_BINARY(special_legendre_polynomial_p, kLegendreP)

VKML_BINARY_ROUTED(igamma, kIgamma, igamma, igamma_, igamma_out)
VKML_BINARY_ROUTED(igammac, kIgammac, igammac, igammac_, igammac_out)
VKML_BINARY(gcd, kGcd)
VKML_BINARY(lcm, kLcm)

// polygamma: n = 0 is digamma, n = 1 trigamma, higher orders (-1)^(n+1) n!
// zeta(n + 1, x) with n in a float parameter.
at::Tensor polygamma_compute(int64_t n, const at::Tensor& a, const at::Tensor& out) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  if (n == 0) return elementwise(kPolygamma0, {a}, out);
  if (n == 1) return elementwise(kTrigamma, {a}, out);
  return elementwise(kPolygamma, {a}, out, {.fp = {double(n)}});
}
// The kernel of order n.
const EwOp& polygamma_op(int64_t n) {
  return n == 0 ? kPolygamma0 : n == 1 ? kTrigamma : kPolygamma;
}
at::Tensor polygamma(int64_t n, const at::Tensor& a) {
  if (runs_on_cpu(polygamma_op(n), {a})) return cpu_route<at::_ops::polygamma>(n, a);
  return polygamma_compute(n, a, at::Tensor());
}
at::Tensor& polygamma_out(int64_t n, const at::Tensor& a, at::Tensor& out) {
  if (runs_on_cpu(polygamma_op(n), {a})) return cpu_route<at::_ops::polygamma_out>(n, a, out);
  polygamma_compute(n, a, out);
  return out;
}

// frexp: the mantissa in the input dtype, the exponent as int32 (computed as a
// float of the input dtype, exact for every exponent these dtypes have).
std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& a, at::Tensor& mantissa,
                                               at::Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(a.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == a.dtype(), "torch.frexp() expects mantissa to have dtype ",
              a.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt,
              "torch.frexp() expects exponent to have int dtype but got ", exponent.dtype());
  if (runs_on_cpu(kFrexpMantissa, {a}))
    return cpu_route<at::_ops::frexp_Tensor_out>(a, mantissa, exponent);
  elementwise(kFrexpMantissa, {a}, mantissa);
  at::Tensor e = elementwise(kFrexpExponent, {a});
  at::native::resize_output(exponent, e.sizes());
  exponent.copy_(e);
  return {mantissa, exponent};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  VKML_REGISTER_UNARY(m, "i0", i0);
  VKML_REGISTER_SPECIAL(m, special_i0e);
  VKML_REGISTER_SPECIAL(m, special_i1);
  VKML_REGISTER_SPECIAL(m, special_i1e);
  VKML_REGISTER_SPECIAL(m, special_ndtri);
  VKML_REGISTER_SPECIAL(m, special_log_ndtr);
  VKML_REGISTER_SPECIAL(m, special_erfcx);
  VKML_REGISTER_SPECIAL(m, special_airy_ai);
  VKML_REGISTER_SPECIAL(m, special_bessel_j0);
  VKML_REGISTER_SPECIAL(m, special_bessel_j1);
  VKML_REGISTER_SPECIAL(m, special_bessel_y0);
  VKML_REGISTER_SPECIAL(m, special_bessel_y1);
  VKML_REGISTER_SPECIAL(m, special_modified_bessel_i0);
  VKML_REGISTER_SPECIAL(m, special_modified_bessel_i1);
  VKML_REGISTER_SPECIAL(m, special_modified_bessel_k0);
  VKML_REGISTER_SPECIAL(m, special_modified_bessel_k1);
  VKML_REGISTER_SPECIAL(m, special_scaled_modified_bessel_k0);
  VKML_REGISTER_SPECIAL(m, special_scaled_modified_bessel_k1);
  VKML_REGISTER_SPECIAL(m, special_spherical_bessel_j0);
  VKML_REGISTER_SPECIAL(m, angle);
  VKML_REGISTER_SPECIAL(m, special_zeta);
  VKML_REGISTER_SPECIAL(m, special_chebyshev_polynomial_t);
  VKML_REGISTER_SPECIAL(m, special_chebyshev_polynomial_u);
  VKML_REGISTER_SPECIAL(m, special_chebyshev_polynomial_v);
  VKML_REGISTER_SPECIAL(m, special_chebyshev_polynomial_w);
  VKML_REGISTER_SPECIAL(m, special_shifted_chebyshev_polynomial_t);
  VKML_REGISTER_SPECIAL(m, special_shifted_chebyshev_polynomial_u);
  VKML_REGISTER_SPECIAL(m, special_shifted_chebyshev_polynomial_v);
  VKML_REGISTER_SPECIAL(m, special_shifted_chebyshev_polynomial_w);
  VKML_REGISTER_SPECIAL(m, special_hermite_polynomial_h);
  VKML_REGISTER_SPECIAL(m, special_hermite_polynomial_he);
  VKML_REGISTER_SPECIAL(m, special_laguerre_polynomial_l);
  VKML_REGISTER_SPECIAL(m, special_legendre_polynomial_p);
  m.impl("igamma", TORCH_FN(igamma));
  m.impl("igamma_", TORCH_FN(igamma_));
  m.impl("igamma.out", TORCH_FN(igamma_out));
  m.impl("igammac", TORCH_FN(igammac));
  m.impl("igammac_", TORCH_FN(igammac_));
  m.impl("igammac.out", TORCH_FN(igammac_out));
  m.impl("gcd", TORCH_FN(gcd));
  m.impl("gcd_", TORCH_FN(gcd_));
  m.impl("gcd.out", TORCH_FN(gcd_out));
  m.impl("lcm", TORCH_FN(lcm));
  m.impl("lcm_", TORCH_FN(lcm_));
  m.impl("lcm.out", TORCH_FN(lcm_out));
  m.impl("polygamma", TORCH_FN(polygamma));
  m.impl("polygamma.out", TORCH_FN(polygamma_out));
  m.impl("frexp.Tensor_out", TORCH_FN(frexp_out));
}

}  // namespace vkml_aten
