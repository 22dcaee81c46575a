#version 450
// Samples that take a varying number of random draws per element (rejection and
// counting methods): Gamma (Marsaglia and Tsang), Poisson (Hoermann's PTRS above a rate
// of 10, products of uniforms below), Binomial (Hoermann's BTRS above a mean of 10,
// sums of geometric waiting times below), and the reparameterization gradient of
// a Gamma sample and of a Beta sample. One element a thread, in float32 (f16/bf16 are converted by the
// caller, as CUDA computes them in float32).
//
// Element i draws Philox4x32-10 blocks at counters (i, offset_lo, offset_hi, j) for
// j = 0, 1, ...: as many as its method needs, independent of every other element
// and of the launch shape.
//! dtypes f32
#include "common.glsl"
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
#include "float_math.glsl"

const float FLT_MIN = 1.17549435e-38;
const float LOG_2PI = 1.8378770664093453;

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
// [0, 1) and (0, 1] from 24 bits: every value exact in float32.
float uniform_closed_open() { return float(next_word() >> 8) * (1.0 / 16777216.0); }
float uniform_open_closed() { return float((next_word() >> 8) + 1u) * (1.0 / 16777216.0); }
// Box-Muller, as random.comp draws normals (u1 in (0, 1): never exactly 0); log_f keeps
// its relative accuracy near 1 (the driver's log may not).
float standard_normal() {
  float u1 = (float(next_word() >> 9) + 0.5) * (1.0 / 8388608.0);
  float u2 = uniform_closed_open();
  return sqrt(-2.0 * log_f(u1)) * cos(6.283185307179586 * u2);
}

// ---- Gamma(alpha, 1)
float sample_gamma(float alpha) {
  // As the CPU: no positive sample below alpha > 0 (NaN included) rounds to the
  // smallest normal float, and every sample is at least that.
  if (!(alpha > 0.0)) return FLT_MIN;
  if (isinf(alpha)) return alpha;
  // alpha < 1: Gamma(alpha + 1) * U^(1 / alpha).
  float log_boost = 0.0;
  if (alpha < 1.0) {
    log_boost = log_f(uniform_open_closed()) / alpha;
    alpha += 1.0;
  }
  float d = alpha - 1.0 / 3.0;
  float c = inversesqrt(9.0 * d);
  // Each round accepts with probability above 0.95: 64 rounds all rejecting has
  // probability below 1e-80.
  float v = 1.0;
  for (int round = 0; round < 64; ++round) {
    float x = standard_normal();
    float y = 1.0 + c * x;
    if (y <= 0.0) continue;
    v = y * y * y;
    float u = uniform_closed_open();
    float xx = x * x;
    if (u < 1.0 - 0.0331 * xx * xx) break;
    if (u > 0.0 && log_f(u) < 0.5 * xx + d * (1.0 - v + log_f(v))) break;
  }
  return max(FLT_MIN, exp(log_boost) * d * v);
}

// ---- Poisson(lambda)
// Loader's deviance term x log(x / np) + np - x, by its series where the two cancel.
float bd0(float x, float np) {
  float diff = x - np;
  if (abs(diff) < 0.1 * (x + np)) {
    float v = diff / (x + np);
    float s = diff * v;
    float ej = 2.0 * x * v;
    float v2 = v * v;
    for (int j = 1; j < 64; ++j) {
      ej *= v2;
      float next = s + ej / float(2 * j + 1);
      if (next == s) break;
      s = next;
    }
    return s;
  }
  return x * log_f(x / np) + np - x;
}
// log n! - (n + 1/2) log n + n - log(2 pi) / 2, for n >= 1.
float stirling_error(float n) {
  if (n > 15.0) {
    float n2 = n * n;
    return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0) / n2) / n2) / n;
  }
  return lgamma_f(n + 1.0) - (n + 0.5) * log_f(n) + n - 0.5 * LOG_2PI;
}
// log(lambda^k e^-lambda / k!) without the cancellation of its three large terms.
float poisson_log_pmf(float k, float lambda) {
  if (k == 0.0) return -lambda;
  return -bd0(k, lambda) - 0.5 * (LOG_2PI + log_f(k)) - stirling_error(k);
}

float sample_poisson(float lambda) {
  if (!(lambda >= 0.0)) {
    report_device_error(pc.errors, DEVICE_ERROR_POISSON_RATE, 0, 0, 0u);
    return NAN_F;
  }
  if (lambda == 0.0) return 0.0;
  if (isinf(lambda)) return lambda;
  if (lambda < 10.0) {
    // The count of uniforms whose running product stays above e^-lambda.
    float limit = exp(-lambda);
    float product = 1.0;
    float count = 0.0;
    for (int n = 0; n < 1024; ++n) {
      product *= uniform_closed_open();
      if (product <= limit) break;
      count += 1.0;
    }
    return count;
  }
  // PTRS (Hoermann 1993): a transformed-rejection proposal with a squeeze.
  float slam = sqrt(lambda);
  float log_lambda = log(lambda);
  float b = 0.931 + 2.53 * slam;
  float a = -0.059 + 0.02483 * b;
  float log_inv_alpha = log(1.1239 + 1.1328 / (b - 3.4));
  float v_r = 0.9277 - 3.6224 / (b - 2.0);
  for (int round = 0; round < 256; ++round) {
    float u = uniform_closed_open() - 0.5;
    float v = uniform_closed_open();
    float us = 0.5 - abs(u);
    if (us <= 0.0) continue;
    float k = floor((2.0 * a / us + b) * u + lambda + 0.43);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (v <= 0.0) return k;
    if (log_f(v) + log_inv_alpha - log(a / (us * us) + b) <= poisson_log_pmf(k, lambda)) return k;
  }
  return floor(lambda);
}

// ---- Binomial(n, p)
// Hoermann's fc(k) = log k! - (k + 1/2) log(k + 1) + (k + 1) - log(2 pi) / 2.
const float FC_TABLE[10] = float[10](8.1061466795e-02, 4.1340695955e-02, 2.7677925685e-02,
                                     2.0790672104e-02, 1.6644691190e-02, 1.3876128823e-02,
                                     1.1896709946e-02, 1.0411265262e-02, 9.2554621827e-03,
                                     8.3305634334e-03);
float stirling_tail(float k) {
  if (k < 10.0) return FC_TABLE[int(k)];
  float r = 1.0 / (k + 1.0);
  float r2 = r * r;
  return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0) * r2) * r2) * r;
}

// BTRS (Hoermann 1993), for n p >= 10 and p <= 1/2.
float binomial_btrs(float n, float p) {
  float q = 1.0 - p;
  float spq = sqrt(n * p * q);
  float b = 1.15 + 2.53 * spq;
  float a = -0.0873 + 0.0248 * b + 0.01 * p;
  float c = n * p + 0.5;
  float v_r = 0.92 - 4.2 / b;
  float log_r = log_f(p / q);
  float alpha = (2.83 + 5.1 / b) * spq;
  float m = floor((n + 1.0) * p);
  for (int round = 0; round < 256; ++round) {
    float u = uniform_closed_open() - 0.5;
    float v = uniform_closed_open();
    float us = 0.5 - abs(u);
    if (us <= 0.0) continue;
    float k = floor((2.0 * a / us + b) * u + c);
    if (k < 0.0 || k > n) continue;
    if (us >= 0.07 && v <= v_r) return k;
    if (v <= 0.0) return k;
    float log_v = log_f(v * alpha / (a / (us * us) + b));
    // Hoermann's bound
    //   (m + 1/2) log((m + 1) / (r (n - m + 1))) + (n + 1) log((n - m + 1) / (n - k + 1))
    //   + (k + 1/2) log(r (n - k + 1) / (k + 1)) + fc(m) + fc(n - m) - fc(k) - fc(n - k),
    // regrouped so that no two large terms cancel in float32 (n up to 2^24).
    float dk = k - m;
    float bound = dk * log_r + dk * log_f((n - k + 1.0) / (k + 1.0)) +
                  (m + 0.5) * (log1p_f(-dk / (n - m + 1.0)) - log1p_f(dk / (m + 1.0))) +
                  (n + 1.0) * log1p_f(dk / (n - k + 1.0)) + stirling_tail(m) +
                  stirling_tail(n - m) - stirling_tail(k) - stirling_tail(n - k);
    if (log_v <= bound) return k;
  }
  return m;
}

// Sums of geometric waiting times until they pass n: for n p < 10, about n p + 1 draws.
float binomial_inversion(float n, float p) {
  float log_q = log1p_f(-p);
  float total = 0.0;
  float count = 0.0;
  for (int draw = 0; draw < 4096; ++draw) {
    float u = uniform_closed_open();
    if (u == 0.0) break;  // an infinite wait
    total += ceil(log_f(u) / log_q);
    if (total > n) break;
    count += 1.0;
  }
  return count;
}

float sample_binomial(float n, float p) {
  if (isnan(n) || isnan(p)) return NAN_F;
  if (n <= 0.0 || p <= 0.0) return 0.0;
  if (p >= 1.0) return n;
  if (p > 0.5) {  // the failures of the mirrored draw
    float q = 1.0 - p;
    return n - (n * q >= 10.0 ? binomial_btrs(n, q) : binomial_inversion(n, q));
  }
  return n * p >= 10.0 ? binomial_btrs(n, p) : binomial_inversion(n, p);
}

// ---- d x / d alpha for a Gamma(alpha, 1) sample x (implicit reparameterization):
// -(d P(alpha, x) / d alpha) / density(x), P the regularized lower incomplete gamma
// function. The derivative in alpha is carried through P's series (x < alpha + 1) or
// Q = 1 - P's continued fraction (Lentz's method) as (value, derivative) pairs.
// log(y) - digamma(y), without cancellation for large y.
float log_minus_digamma(float y) {
  if (y >= 10.0) {
    float r = 1.0 / y;
    float r2 = r * r;
    return r * (0.5 + r * (1.0 / 12.0 - r2 * (1.0 / 120.0 - r2 * (1.0 / 252.0 - r2 / 240.0))));
  }
  return log_f(y) - digamma_f(y);
}
// log(x) - digamma(y), for x near y when y is large.
float log_x_minus_digamma(float x, float y) {
  if (y >= 10.0) return log1p_f((x - y) / y) + log_minus_digamma(y);
  return log_f(x) - digamma_f(y);
}

float gamma_sample_grad(float alpha, float x) {
  if (isnan(alpha) || isnan(x)) return NAN_F;
  if (!(x > 0.0)) return 0.0;
  if (alpha >= 1e5) {
    // Wilson-Hilferty: x = alpha (1 - 1/(9 alpha) + z / (3 sqrt(alpha)))^3 with z held
    // fixed; its derivative agrees with the exact one to 1e-7 here.
    float t1 = expm1_f(log1p_f((x - alpha) / alpha) / 3.0);  // (x / alpha)^(1/3) - 1
    float t = 1.0 + t1;
    return t * t * (t + 1.0 / (3.0 * alpha) - 1.5 * (t1 + 1.0 / (9.0 * alpha)));
  }
  if (x < alpha + 1.0) {
    // P = x^a e^-x / Gamma(a + 1) * S, S = sum_n x^n / ((a + 1) ... (a + n)).
    float term = 1.0, inv_sum = 0.0, s = 1.0, ds = 0.0;
    for (int n = 1; n < 20000; ++n) {
      float an = alpha + float(n);
      term *= x / an;
      inv_sum += 1.0 / an;
      s += term;
      ds -= term * inv_sum;
      if (term <= s * 1e-8 && term * inv_sum <= abs(ds) * 1e-8) break;
    }
    return -(x / alpha) * (log_x_minus_digamma(x, alpha + 1.0) * s + ds);
  }
  // Q = x^a e^-x / Gamma(a) * F, F = 1 / (b0 - a1 / (b1 - a2 / (b2 - ...))),
  // b_n = x + 2n + 1 - a, a_n = n (n - a).
  const float tiny = 1e-30;
  float f = x + 1.0 - alpha, df = -1.0;
  float cv = f, cd = -1.0, dv = 0.0, dd = 0.0;
  for (int n = 1; n < 20000; ++n) {
    float an = float(n) * (float(n) - alpha), dan = -float(n);
    float bn = x + float(2 * n + 1) - alpha;  // d bn / d alpha = -1
    float den = bn - an * dv;
    float dden = -1.0 - (dan * dv + an * dd);
    if (abs(den) < tiny) den = tiny;
    dv = 1.0 / den;
    dd = -dden * dv * dv;
    float c_next = bn - an / cv;
    float dc_next = -1.0 - (dan * cv - an * cd) / (cv * cv);
    if (abs(c_next) < tiny) c_next = tiny;
    cv = c_next;
    cd = dc_next;
    float delta = cv * dv, ddelta = cd * dv + cv * dd;
    float df_next = df * delta + f * ddelta;
    f *= delta;
    // a_n = 0 (an integer alpha) ends the fraction's value but not its derivative.
    bool done = abs(delta - 1.0) < 1e-7 && abs(df_next - df) <= 1e-7 * abs(df_next);
    df = df_next;
    if (done) break;
  }
  float F = 1.0 / f, dF = -df / (f * f);
  return x * (log_x_minus_digamma(x, alpha) * F + dF);
}

// ---- d x / d alpha of a Beta(alpha, beta) sample x, beta held, divided by 1 - x (what
// Dirichlet.rsample's backward takes): -(d I_x(alpha, beta) / d alpha) / density / (1 - x)
// with I the regularized incomplete beta function, by its continued fraction (Lentz)
// with (value, derivative) pairs as vec2.
vec2 dmul(vec2 u, vec2 v) { return vec2(u.x * v.x, u.x * v.y + u.y * v.x); }
vec2 ddiv(vec2 u, vec2 v) { return vec2(u.x / v.x, (u.y * v.x - u.x * v.y) / (v.x * v.x)); }
vec2 nonzero(vec2 v) { return abs(v.x) < 1e-30 ? vec2(1e-30, v.y) : v; }

// K = 1 / (1 + d1 / (1 + d2 / (1 + ...))) of I_z(p, q) = z^p (1 - z)^q / (p B(p, q)) K, with
// d_2m+1 = -(p + m)(p + q + m) z / ((p + 2m)(p + 2m + 1)), d_2m = m (q - m) z / ((p + 2m - 1)
// (p + 2m)); p and q carry their derivatives in alpha.
vec2 beta_fraction(vec2 p, vec2 q, float z) {
  const vec2 one = vec2(1.0, 0.0);
  vec2 pq = p + q;
  vec2 c = one;
  vec2 d = ddiv(one, nonzero(one - z * ddiv(pq, p + one)));
  vec2 h = d;
  for (int m = 1; m < 20000; ++m) {
    float fm = float(m);
    vec2 even = ddiv(fm * z * (q - vec2(fm, 0.0)),
                     dmul(p + vec2(2.0 * fm - 1.0, 0.0), p + vec2(2.0 * fm, 0.0)));
    d = ddiv(one, nonzero(one + dmul(even, d)));
    c = nonzero(one + ddiv(even, c));
    h = dmul(h, dmul(d, c));
    vec2 odd = ddiv(-z * dmul(p + vec2(fm, 0.0), pq + vec2(fm, 0.0)),
                    dmul(p + vec2(2.0 * fm, 0.0), p + vec2(2.0 * fm + 1.0, 0.0)));
    d = ddiv(one, nonzero(one + dmul(odd, d)));
    c = nonzero(one + ddiv(odd, c));
    vec2 delta = dmul(d, c);
    float previous = h.y;
    h = dmul(h, delta);
    if (abs(delta.x - 1.0) < 1e-7 && abs(h.y - previous) <= 1e-7 * abs(h.y)) break;
  }
  return h;
}

float dirichlet_sample_grad(float x, float alpha, float total) {
  if (isnan(x) || isnan(alpha) || isnan(total)) return NAN_F;
  float beta = total - alpha;
  // x = 1 (a float32 Dirichlet component whose others are tiny) takes the limit
  // (digamma(alpha + beta) - digamma(alpha)) / beta of the mirrored branch, as the CPU.
  if (!(x > 0.0 && alpha > 0.0 && beta > 0.0)) return 0.0;
  x = min(x, 1.0);
  // log x - digamma(alpha) + digamma(alpha + beta), without the cancellation of its
  // terms for large parameters.
  float shift = alpha >= 10.0 ? log_f(x * total / alpha) + log_minus_digamma(alpha) -
                                    log_minus_digamma(total)
                              : log_f(x) - digamma_f(alpha) + digamma_f(total);
  if (x < (alpha + 1.0) / (total + 2.0)) {
    vec2 k = beta_fraction(vec2(alpha, 1.0), vec2(beta, 0.0), x);
    return -(x / alpha) * (k.x * (shift - 1.0 / alpha) + k.y);
  }
  // I_x(alpha, beta) = 1 - I_(1-x)(beta, alpha): alpha is the fraction's second parameter.
  vec2 k = beta_fraction(vec2(beta, 0.0), vec2(alpha, 1.0), 1.0 - x);
  return (x / beta) * (k.x * shift + k.y);
}

void main() {
  uint i = linear_id();
  if (i >= pc.numel) return;
  g_element = i;
  float a = BufF32(pc.a).v[i];
  float result;
  if (KIND == SAMPLE_GAMMA) {
    result = sample_gamma(a);
  } else if (KIND == SAMPLE_POISSON) {
    result = sample_poisson(a);
  } else if (KIND == SAMPLE_BINOMIAL) {
    result = sample_binomial(a, BufF32(pc.b).v[i]);
  } else if (KIND == SAMPLE_GAMMA_GRAD) {
    result = gamma_sample_grad(a, BufF32(pc.b).v[i]);
  } else {
    result = dirichlet_sample_grad(a, BufF32(pc.b).v[i], BufF32(pc.c).v[i]);
  }
  BufF32(pc.dst).v[i] = result;
}
