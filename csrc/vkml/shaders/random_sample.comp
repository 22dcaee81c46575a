#version 450
// Samples that take a varying number of random draws per element (rejection and
// counting methods): Gamma (Marsaglia and Tsang), Poisson (Hoermann's PTRS above a rate
// of 10, products of uniforms below), Binomial (Hoermann's BTRS above a mean of 10,
// sums of geometric waiting times below), and the reparameterization gradient of
// a Gamma sample and of a Beta sample. One element a thread, in float32 (f16/bf16 are
// converted by the caller, as CUDA computes them in float32), or in double for float64
// (uniforms of 53 bits, the math of f64_math.glsl and f64_gamma.glsl), as the CPU's.
//
// Element i draws Philox4x32-10 blocks at counters (i, offset_lo, offset_hi, j) for
// j = 0, 1, ...: as many as its method needs, independent of every other element
// and of the launch shape.
//! dtypes f32 f64
#include "common.glsl"
#include "float_store.glsl"
#include "device_error.glsl"

#include "random_sample_push.h"

layout(constant_id = 0) const int KIND = SAMPLE_GAMMA;

const uint WG = RANDOM_SAMPLE_WG;
layout(local_size_x = WG) in;

#include "philox.glsl"

#define NAN_F uintBitsToFloat(0x7fc00000u)
#define INF_F uintBitsToFloat(0x7f800000u)
#define PI 3.14159265358979323846
bool sign_bit(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
float copy_sign(float mag, float sgn) { return sign_bit(sgn) ? -abs(mag) : abs(mag); }

// The math of the arithmetic type FT (float_store.glsl). K(c) is a constant in FT's
// precision (a double literal; folded to float in the float32 variant); the tolerances end the series and continued fractions near FT's epsilon.
#if defined(ST_F64)
#include "f64_math.glsl"
#include "f64_gamma.glsl"
#define K(c) double(c)
#define FT2 dvec2
#define EXP(x) exp_d(x)
#define LOG(x) log_d(x)
#define LOG_FAST(x) log_d(x)
#define LOG1P(x) log1p_d(x)
#define EXPM1(x) expm1_d(x)
#define LGAMMA(x) lgamma_d(x)
#define DIGAMMA(x) digamma_d(x)
const double SMALLEST_NORMAL = 2.2250738585072014e-308LF;
const double LENTZ_TINY = 1e-300LF;
const double FRACTION_TOL = 1e-15LF;
const double SERIES_TOL = 1e-16LF;
// Past this alpha the Gamma sample's gradient takes Wilson-Hilferty, whose error falls
// as 1 / alpha (1e-7 at 1e5); below it the series takes at most ~9 sqrt(alpha) terms.
const double WILSON_HILFERTY_ALPHA = 4e6LF;
#else
#include "float_math.glsl"
#define K(c) float(c)
#define FT2 vec2
#define EXP(x) exp(x)
#define LOG(x) log_f(x)
#define LOG_FAST(x) log(x)
#define LOG1P(x) log1p_f(x)
#define EXPM1(x) expm1_f(x)
#define LGAMMA(x) lgamma_f(x)
#define DIGAMMA(x) digamma_f(x)
const float SMALLEST_NORMAL = 1.17549435e-38;
const float LENTZ_TINY = 1e-30;
const float FRACTION_TOL = 1e-7;
const float SERIES_TOL = 1e-8;
const float WILSON_HILFERTY_ALPHA = 1e5;
#endif
#define NAN_FT FT(NAN_F)

const FT LOG_2PI = K(1.8378770664093454836LF);

// ---- the thread's stream of draws
uint g_element;
uvec4 g_words;
uint g_next = 4u;
uint g_block = 0u;

uint next_word() {
  if (g_next == 4u) {
    g_words = philox4x32(uvec4(g_element, pc.offset_lo, pc.offset_hi, g_block),
                         uvec2(pc.seed_lo, pc.seed_hi), 10);
    ++g_block;
    g_next = 0u;
  }
  return g_words[g_next++];
}
#if defined(ST_F64)
// [0, 1), (0, 1] and (0, 1) from 53 bits, as the CPU's double uniforms: exact in double.
double uniform_bits(double half_step) {
  double hi = double(next_word() >> 11);
  double lo = double(next_word());
  return (hi * 4294967296.0LF + lo + half_step) * (1.0LF / 9007199254740992.0LF);
}
double uniform_closed_open() { return uniform_bits(0.0LF); }
double uniform_open_closed() { return uniform_bits(1.0LF); }
double uniform_open_open() { return uniform_bits(0.5LF); }
// cos(2 pi u) for u in [0, 1): cos(pi (n + r)) = (-1)^n cos(pi r), |r| <= 1/2.
double cos_two_pi(double u) {
  double t = 2.0LF * u;
  double r = offset_from_int_d(t);
  double s, c;
  sincospi_d(r, s, c);
  return mod(t - r, 2.0LF) == 0.0LF ? c : -c;
}
#else
// [0, 1) and (0, 1] from 24 bits: every value exact in float32.
float uniform_closed_open() { return float(next_word() >> 8) * (1.0 / 16777216.0); }
float uniform_open_closed() { return float((next_word() >> 8) + 1u) * (1.0 / 16777216.0); }
float uniform_open_open() { return (float(next_word() >> 9) + 0.5) * (1.0 / 8388608.0); }
float cos_two_pi(float u) { return cos(6.283185307179586 * u); }
#endif
// Box-Muller, as random.comp draws normals (u1 in (0, 1): never exactly 0); LOG keeps
// its relative accuracy near 1 (the driver's log may not).
FT standard_normal() {
  FT u1 = uniform_open_open();
  FT u2 = uniform_closed_open();
  return sqrt(FT(-2.0) * LOG(u1)) * cos_two_pi(u2);
}

// ---- Gamma(alpha, 1)
FT sample_gamma(FT alpha) {
  // As the CPU: no positive sample below alpha > 0 (NaN included) rounds to the
  // smallest normal number of the dtype, and every sample is at least that.
  if (!(alpha > FT(0.0))) return SMALLEST_NORMAL;
  if (isinf(alpha)) return alpha;
  // alpha < 1: Gamma(alpha + 1) * U^(1 / alpha).
  FT log_boost = FT(0.0);
  if (alpha < FT(1.0)) {
    log_boost = LOG(uniform_open_closed()) / alpha;
    alpha += FT(1.0);
  }
  FT d = alpha - FT(1.0) / FT(3.0);
  FT c = inversesqrt(FT(9.0) * d);
  // Each round accepts with probability above 0.95: 64 rounds all rejecting has
  // probability below 1e-80.
  FT v = FT(1.0);
  for (int round = 0; round < 64; ++round) {
    FT x = standard_normal();
    FT y = FT(1.0) + c * x;
    if (y <= FT(0.0)) continue;
    v = y * y * y;
    FT u = uniform_closed_open();
    FT xx = x * x;
    if (u < FT(1.0) - K(0.0331LF) * xx * xx) break;
    if (u > FT(0.0) && LOG(u) < FT(0.5) * xx + d * (FT(1.0) - v + LOG(v))) break;
  }
  return max(SMALLEST_NORMAL, EXP(log_boost) * d * v);
}

// ---- Poisson(lambda)
// Loader's deviance term x log(x / np) + np - x, by its series where the two cancel.
FT bd0(FT x, FT np) {
  FT diff = x - np;
  if (abs(diff) < FT(0.1) * (x + np)) {
    FT v = diff / (x + np);
    FT s = diff * v;
    FT ej = FT(2.0) * x * v;
    FT v2 = v * v;
    for (int j = 1; j < 64; ++j) {
      ej *= v2;
      FT next = s + ej / FT(2 * j + 1);
      if (next == s) break;
      s = next;
    }
    return s;
  }
  return x * LOG(x / np) + np - x;
}
// The asymptotic series of log n! - (n + 1/2) log(n + 1) + n + 1 - log(2 pi) / 2 in
// r = 1 / (n + 1), to r^9: below 1e-17 from n = 15 (Stirling's error of n + 1).
FT stirling_series(FT r) {
  FT r2 = r * r;
  return (FT(1.0) / FT(12.0) -
          r2 * (FT(1.0) / FT(360.0) -
                r2 * (FT(1.0) / FT(1260.0) - r2 * (FT(1.0) / FT(1680.0) - r2 / FT(1188.0))))) *
         r;
}
// log n! - (n + 1/2) log n + n - log(2 pi) / 2, for n >= 1.
FT stirling_error(FT n) {
  if (n > FT(15.0)) return stirling_series(FT(1.0) / n);
  return LGAMMA(n + FT(1.0)) - (n + FT(0.5)) * LOG(n) + n - FT(0.5) * LOG_2PI;
}
// log(lambda^k e^-lambda / k!) without the cancellation of its three large terms.
FT poisson_log_pmf(FT k, FT lambda) {
  if (k == FT(0.0)) return -lambda;
  return -bd0(k, lambda) - FT(0.5) * (LOG_2PI + LOG(k)) - stirling_error(k);
}

FT sample_poisson(FT lambda) {
  if (!(lambda >= FT(0.0))) {
    report_device_error(pc.errors, DEVICE_ERROR_POISSON_RATE, 0, 0, 0u);
    return NAN_FT;
  }
  if (lambda == FT(0.0)) return FT(0.0);
  if (isinf(lambda)) return lambda;
  if (lambda < FT(10.0)) {
    // The count of uniforms whose running product stays above e^-lambda.
    FT limit = EXP(-lambda);
    FT product = FT(1.0);
    FT count = FT(0.0);
    for (int n = 0; n < 1024; ++n) {
      product *= uniform_closed_open();
      if (product <= limit) break;
      count += FT(1.0);
    }
    return count;
  }
  // PTRS (Hoermann 1993): a transformed-rejection proposal with a squeeze.
  FT slam = sqrt(lambda);
  FT b = K(0.931LF) + K(2.53LF) * slam;
  FT a = K(-0.059LF) + K(0.02483LF) * b;
  FT log_inv_alpha = LOG_FAST(K(1.1239LF) + K(1.1328LF) / (b - K(3.4LF)));
  FT v_r = K(0.9277LF) - K(3.6224LF) / (b - FT(2.0));
  for (int round = 0; round < 256; ++round) {
    FT u = uniform_closed_open() - FT(0.5);
    FT v = uniform_closed_open();
    FT us = FT(0.5) - abs(u);
    if (us <= FT(0.0)) continue;
    FT k = floor((FT(2.0) * a / us + b) * u + lambda + K(0.43LF));
    if (us >= K(0.07LF) && v <= v_r) return k;
    if (k < FT(0.0) || (us < K(0.013LF) && v > us)) continue;
    if (v <= FT(0.0)) return k;
    if (LOG(v) + log_inv_alpha - LOG_FAST(a / (us * us) + b) <= poisson_log_pmf(k, lambda))
      return k;
  }
  return floor(lambda);
}

// ---- Binomial(n, p)
// Hoermann's fc(k) = log k! - (k + 1/2) log(k + 1) + (k + 1) - log(2 pi) / 2.
const FT FC_TABLE[10] = FT[10](
    K(0.081061466795327258219LF), K(0.041340695955409294094LF), K(0.027677925684998339149LF),
    K(0.020790672103765093112LF), K(0.016644691189821192163LF), K(0.013876128823070747999LF),
    K(0.011896709945891770095LF), K(0.010411265261972096497LF), K(0.0092554621827127329177LF),
    K(0.0083305634333628712565LF));
FT stirling_tail(FT k) {
  if (k < FT(10.0)) return FC_TABLE[int(k)];
  return stirling_series(FT(1.0) / (k + FT(1.0)));
}

// BTRS (Hoermann 1993), for n p >= 10 and p <= 1/2.
FT binomial_btrs(FT n, FT p) {
  FT q = FT(1.0) - p;
  FT spq = sqrt(n * p * q);
  FT b = K(1.15LF) + K(2.53LF) * spq;
  FT a = K(-0.0873LF) + K(0.0248LF) * b + K(0.01LF) * p;
  FT c = n * p + FT(0.5);
  FT v_r = K(0.92LF) - K(4.2LF) / b;
  FT log_r = LOG(p / q);
  FT alpha = (K(2.83LF) + K(5.1LF) / b) * spq;
  FT m = floor((n + FT(1.0)) * p);
  for (int round = 0; round < 256; ++round) {
    FT u = uniform_closed_open() - FT(0.5);
    FT v = uniform_closed_open();
    FT us = FT(0.5) - abs(u);
    if (us <= FT(0.0)) continue;
    FT k = floor((FT(2.0) * a / us + b) * u + c);
    if (k < FT(0.0) || k > n) continue;
    if (us >= K(0.07LF) && v <= v_r) return k;
    if (v <= FT(0.0)) return k;
    FT log_v = LOG(v * alpha / (a / (us * us) + b));
    // Hoermann's bound
    //   (m + 1/2) log((m + 1) / (r (n - m + 1))) + (n + 1) log((n - m + 1) / (n - k + 1))
    //   + (k + 1/2) log(r (n - k + 1) / (k + 1)) + fc(m) + fc(n - m) - fc(k) - fc(n - k),
    // regrouped so that no two large terms cancel (n up to 2^24 in float32).
    FT dk = k - m;
    FT bound = dk * log_r + dk * LOG((n - k + FT(1.0)) / (k + FT(1.0))) +
               (m + FT(0.5)) * (LOG1P(-dk / (n - m + FT(1.0))) - LOG1P(dk / (m + FT(1.0)))) +
               (n + FT(1.0)) * LOG1P(dk / (n - k + FT(1.0))) + stirling_tail(m) +
               stirling_tail(n - m) - stirling_tail(k) - stirling_tail(n - k);
    if (log_v <= bound) return k;
  }
  return m;
}

// Sums of geometric waiting times until they pass n: for n p < 10, about n p + 1 draws.
FT binomial_inversion(FT n, FT p) {
  FT log_q = LOG1P(-p);
  FT total = FT(0.0);
  FT count = FT(0.0);
  for (int draw = 0; draw < 4096; ++draw) {
    FT u = uniform_closed_open();
    if (u == FT(0.0)) break;  // an infinite wait
    total += ceil(LOG(u) / log_q);
    if (total > n) break;
    count += FT(1.0);
  }
  return count;
}

FT sample_binomial(FT n, FT p) {
  if (isnan(n) || isnan(p)) return NAN_FT;
  if (n <= FT(0.0) || p <= FT(0.0)) return FT(0.0);
  if (p >= FT(1.0)) return n;
  if (p > FT(0.5)) {  // the failures of the mirrored draw
    FT q = FT(1.0) - p;
    return n - (n * q >= FT(10.0) ? binomial_btrs(n, q) : binomial_inversion(n, q));
  }
  return n * p >= FT(10.0) ? binomial_btrs(n, p) : binomial_inversion(n, p);
}

// ---- d x / d alpha for a Gamma(alpha, 1) sample x (implicit reparameterization):
// -(d P(alpha, x) / d alpha) / density(x), P the regularized lower incomplete gamma
// function. The derivative in alpha is carried through P's series (x < alpha + 1) or
// Q = 1 - P's continued fraction (Lentz's method) as (value, derivative) pairs.
// log(y) - digamma(y), without cancellation for large y: its asymptotic series to y^-15
// (the next term is below 1e-15 of the sum from y = 10).
FT log_minus_digamma(FT y) {
  if (y >= FT(10.0)) {
    FT r = FT(1.0) / y;
    FT r2 = r * r;
    FT even = FT(1.0) / FT(12.0) -
              r2 * (FT(1.0) / FT(120.0) -
                    r2 * (FT(1.0) / FT(252.0) -
                          r2 * (FT(1.0) / FT(240.0) -
                                r2 * (FT(1.0) / FT(132.0) -
                                      r2 * (FT(691.0) / FT(32760.0) - r2 / FT(12.0))))));
    return r * (FT(0.5) + r * even);
  }
  return LOG(y) - DIGAMMA(y);
}
// log(x) - digamma(y), for x near y when y is large.
FT log_x_minus_digamma(FT x, FT y) {
  if (y >= FT(10.0)) return LOG1P((x - y) / y) + log_minus_digamma(y);
  return LOG(x) - DIGAMMA(y);
}

FT gamma_sample_grad(FT alpha, FT x) {
  if (isnan(alpha) || isnan(x)) return NAN_FT;
  if (!(x > FT(0.0))) return FT(0.0);
  if (alpha >= WILSON_HILFERTY_ALPHA) {
    // Wilson-Hilferty: x = alpha (1 - 1/(9 alpha) + z / (3 sqrt(alpha)))^3 with z held
    // fixed; its derivative agrees with the exact one to about 1e-2 / alpha here.
    FT t1 = EXPM1(LOG1P((x - alpha) / alpha) / FT(3.0));  // (x / alpha)^(1/3) - 1
    FT t = FT(1.0) + t1;
    return t * t *
           (t + FT(1.0) / (FT(3.0) * alpha) - FT(1.5) * (t1 + FT(1.0) / (FT(9.0) * alpha)));
  }
  if (x < alpha + FT(1.0)) {
    // P = x^a e^-x / Gamma(a + 1) * S, S = sum_n x^n / ((a + 1) ... (a + n)).
    FT term = FT(1.0), inv_sum = FT(0.0), s = FT(1.0), ds = FT(0.0);
    for (int n = 1; n < 40000; ++n) {
      FT an = alpha + FT(n);
      term *= x / an;
      inv_sum += FT(1.0) / an;
      s += term;
      ds -= term * inv_sum;
      if (term <= s * SERIES_TOL && term * inv_sum <= abs(ds) * SERIES_TOL) break;
    }
    return -(x / alpha) * (log_x_minus_digamma(x, alpha + FT(1.0)) * s + ds);
  }
  // Q = x^a e^-x / Gamma(a) * F, F = 1 / (b0 - a1 / (b1 - a2 / (b2 - ...))),
  // b_n = x + 2n + 1 - a, a_n = n (n - a).
  FT f = x + FT(1.0) - alpha, df = FT(-1.0);
  FT cv = f, cd = FT(-1.0), dv = FT(0.0), dd = FT(0.0);
  for (int n = 1; n < 40000; ++n) {
    FT an = FT(n) * (FT(n) - alpha), dan = -FT(n);
    FT bn = x + FT(2 * n + 1) - alpha;  // d bn / d alpha = -1
    FT den = bn - an * dv;
    FT dden = FT(-1.0) - (dan * dv + an * dd);
    if (abs(den) < LENTZ_TINY) den = LENTZ_TINY;
    dv = FT(1.0) / den;
    dd = -dden * dv * dv;
    FT c_next = bn - an / cv;
    FT dc_next = FT(-1.0) - (dan * cv - an * cd) / (cv * cv);
    if (abs(c_next) < LENTZ_TINY) c_next = LENTZ_TINY;
    cv = c_next;
    cd = dc_next;
    FT delta = cv * dv, ddelta = cd * dv + cv * dd;
    FT df_next = df * delta + f * ddelta;
    f *= delta;
    // a_n = 0 (an integer alpha) ends the fraction's value but not its derivative.
    bool done =
        abs(delta - FT(1.0)) < FRACTION_TOL && abs(df_next - df) <= FRACTION_TOL * abs(df_next);
    df = df_next;
    if (done) break;
  }
  FT F = FT(1.0) / f, dF = -df / (f * f);
  return x * (log_x_minus_digamma(x, alpha) * F + dF);
}

// ---- d x / d alpha of a Beta(alpha, beta) sample x, beta held, divided by 1 - x (what
// Dirichlet.rsample's backward takes): -(d I_x(alpha, beta) / d alpha) / density / (1 - x)
// with I the regularized incomplete beta function, by its continued fraction (Lentz)
// with (value, derivative) pairs as FT2.
FT2 dmul(FT2 u, FT2 v) { return FT2(u.x * v.x, u.x * v.y + u.y * v.x); }
FT2 ddiv(FT2 u, FT2 v) { return FT2(u.x / v.x, (u.y * v.x - u.x * v.y) / (v.x * v.x)); }
FT2 nonzero(FT2 v) { return abs(v.x) < LENTZ_TINY ? FT2(LENTZ_TINY, v.y) : v; }

// K = 1 / (1 + d1 / (1 + d2 / (1 + ...))) of I_z(p, q) = z^p (1 - z)^q / (p B(p, q)) K, with
// d_2m+1 = -(p + m)(p + q + m) z / ((p + 2m)(p + 2m + 1)), d_2m = m (q - m) z / ((p + 2m - 1)
// (p + 2m)); p and q carry their derivatives in alpha.
FT2 beta_fraction(FT2 p, FT2 q, FT z) {
  const FT2 one = FT2(1.0, 0.0);
  FT2 pq = p + q;
  FT2 c = one;
  FT2 d = ddiv(one, nonzero(one - z * ddiv(pq, p + one)));
  FT2 h = d;
  for (int m = 1; m < 20000; ++m) {
    FT fm = FT(m);
    FT2 even = ddiv(fm * z * (q - FT2(fm, 0.0)),
                    dmul(p + FT2(FT(2.0) * fm - FT(1.0), 0.0), p + FT2(FT(2.0) * fm, 0.0)));
    d = ddiv(one, nonzero(one + dmul(even, d)));
    c = nonzero(one + ddiv(even, c));
    h = dmul(h, dmul(d, c));
    FT2 odd = ddiv(-z * dmul(p + FT2(fm, 0.0), pq + FT2(fm, 0.0)),
                   dmul(p + FT2(FT(2.0) * fm, 0.0), p + FT2(FT(2.0) * fm + FT(1.0), 0.0)));
    d = ddiv(one, nonzero(one + dmul(odd, d)));
    c = nonzero(one + ddiv(odd, c));
    FT2 delta = dmul(d, c);
    FT previous = h.y;
    h = dmul(h, delta);
    if (abs(delta.x - FT(1.0)) < FRACTION_TOL && abs(h.y - previous) <= FRACTION_TOL * abs(h.y))
      break;
  }
  return h;
}

FT dirichlet_sample_grad(FT x, FT alpha, FT total) {
  if (isnan(x) || isnan(alpha) || isnan(total)) return NAN_FT;
  FT beta = total - alpha;
  // x = 1 (a Dirichlet component whose others are tiny) takes the limit
  // (digamma(alpha + beta) - digamma(alpha)) / beta of the mirrored branch, as the CPU.
  if (!(x > FT(0.0) && alpha > FT(0.0) && beta > FT(0.0))) return FT(0.0);
  x = min(x, FT(1.0));
  // log x - digamma(alpha) + digamma(alpha + beta), without the cancellation of its
  // terms for large parameters.
  FT shift = alpha >= FT(10.0) ? LOG(x * total / alpha) + log_minus_digamma(alpha) -
                                     log_minus_digamma(total)
                               : LOG(x) - DIGAMMA(alpha) + DIGAMMA(total);
  if (x < (alpha + FT(1.0)) / (total + FT(2.0))) {
    FT2 k = beta_fraction(FT2(alpha, 1.0), FT2(beta, 0.0), x);
    return -(x / alpha) * (k.x * (shift - FT(1.0) / alpha) + k.y);
  }
  // I_x(alpha, beta) = 1 - I_(1-x)(beta, alpha): alpha is the fraction's second parameter.
  FT2 k = beta_fraction(FT2(beta, 0.0), FT2(alpha, 1.0), FT(1.0) - x);
  return (x / beta) * (k.x * shift + k.y);
}

void main() {
  uint i = linear_id();
  if (i >= pc.numel) return;
  g_element = i;
  FT a = LD(pc.a, i);
  FT result;
  if (KIND == SAMPLE_GAMMA) {
    result = sample_gamma(a);
  } else if (KIND == SAMPLE_POISSON) {
    result = sample_poisson(a);
  } else if (KIND == SAMPLE_BINOMIAL) {
    result = sample_binomial(a, LD(pc.b, i));
  } else if (KIND == SAMPLE_GAMMA_GRAD) {
    result = gamma_sample_grad(a, LD(pc.b, i));
  } else {
    result = dirichlet_sample_grad(a, LD(pc.b, i), LD(pc.c, i));
  }
  STORE(pc.dst, i, result);
}
