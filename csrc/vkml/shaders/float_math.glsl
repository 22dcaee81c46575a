// The fp32 math of elementwise.comp (included where the storage dtype computes in
// fp32 and has transcendental ops: the f32, f16 and bf16 variants).
// The driver's exp/log/tanh/atan are accurate in absolute terms only (lavapipe:
// log(1 + 1e-3) is 3e-4 off relatively, tanh(1e-4) 10%): the functions where
// that matters get series of their own.
#include "erfinv_estimate.glsl"

// log(1 + x) = 2 atanh(x / (2 + x)); the series converges fast for x in [-0.5, 1].
float log1p_series(float x) {
  float s = x / (2.0 + x);
  float s2 = s * s;
  float p = 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  p = p * s2 + 1.0;
  return 2.0 * s * p;
}
float log1p_f(float x) {
  if (x >= -0.5 && x <= 1.0) return log1p_series(x);
  return log(1.0 + x);
}
// The driver's log and log2 read a subnormal's exponent as -127 (lavapipe: log(1e-40)
// = -88.0, not -92.1): subnormals are scaled by 2^24 into the normal range first.
float log_f(float x) {
  if (x >= 0.5 && x <= 2.0) return log1p_series(x - 1.0);  // x - 1 is exact here
  if (x > 0.0 && x < 1.17549435e-38) return log(x * 16777216.0) - 16.635532333438687;
  return log(x);
}
float log2_f(float x) {
  if (x >= 0.5 && x <= 2.0) return log1p_series(x - 1.0) * 1.4426950408889634;
  if (x > 0.0 && x < 1.17549435e-38) return log2(x * 16777216.0) - 24.0;
  return log2(x);
}
// expm1 by its Taylor series, for |x| < 1/2.
float expm1_series(float x) {
  float p = 1.0 / 39916800.0;  // Taylor to x^11 / 11!
  p = p * x + 1.0 / 3628800.0;
  p = p * x + 1.0 / 362880.0;
  p = p * x + 1.0 / 40320.0;
  p = p * x + 1.0 / 5040.0;
  p = p * x + 1.0 / 720.0;
  p = p * x + 1.0 / 120.0;
  p = p * x + 1.0 / 24.0;
  p = p * x + 1.0 / 6.0;
  p = p * x + 0.5;
  p = p * x + 1.0;
  return p * x;
}
// x = n ln 2 + r with n = round(x / ln 2), |r| <= ln 2 / 2, r in two parts (Cody-Waite:
// n ln2_hi is exact).
float ln2_reduced(float x, out float n) {
  n = roundEven(x * 1.4426950408889634);
  precise float r = (x - n * 0.693359375) + n * 2.12194440e-4;
  return r;
}
// exp(x) = 2^n e^r, e^r by its Taylor series: within 1.2 ulps for every x. The driver's
// exp is exp2(x log2 e), whose product's rounding costs about |x| ulps (62 at x = 80 on
// lavapipe), and its exp2 alone 3. 2^n in two halves, so that subnormal results come
// out right (ldexp would be undefined past an exponent of -126, and costs more to
// compile).
float exp_f(float x) {
  if (isnan(x)) return x;
  if (x > 88.8) return INF_F;  // past the largest float
  if (x < -104.0) return 0.0;  // below the smallest subnormal
  float n;
  float p = 1.0 + expm1_series(ln2_reduced(x, n));
  int k = int(n), h = k / 2;  // 2^k as two normal powers of two, from their bits
  return p * intBitsToFloat((h + 127) << 23) * intBitsToFloat((k - h + 127) << 23);
}
// Beyond 1/2, exp(x) - 1 would lose to cancellation what exp_f's rounding costs:
// expm1(x) = 2^n expm1(r) + (2^n - 1), whose second term is exact. Past -17 and 30
// there is nothing to cancel.
float expm1_f(float x) {
  if (abs(x) < 0.5) return expm1_series(x);
  if (!(x > -17.0 && x < 30.0)) return exp_f(x) - 1.0;  // NaN too
  float n;
  float r = ln2_reduced(x, n);
  float p = intBitsToFloat((int(n) + 127) << 23);  // 2^n, normal for |n| <= 44
  return p * expm1_series(r) + (p - 1.0);
}
float tanh_f(float x) {
  if (isnan(x)) return x;
  float ax = abs(x);
  if (ax > 15.0) return sign(x);
  float e = expm1_f(2.0 * ax);
  return copy_sign(e / (e + 2.0), x);
}
float sigmoid_f(float x) { return 1.0 / (1.0 + exp_f(-x)); }
float softplus_f(float x) { return x > 20.0 ? x : log1p_f(exp_f(x)); }

// atan on [0, 1]: reduced to |z| <= tan(pi/8) around 0 or pi/4, then its series.
float atan01(float t) {
  float base = 0.0;
  if (t > 0.41421356) {
    base = PI / 4.0;
    t = (t - 1.0) / (t + 1.0);
  }
  float z2 = t * t;
  float p = -1.0 / 23.0;
  p = p * z2 + 1.0 / 21.0;
  p = p * z2 - 1.0 / 19.0;
  p = p * z2 + 1.0 / 17.0;
  p = p * z2 - 1.0 / 15.0;
  p = p * z2 + 1.0 / 13.0;
  p = p * z2 - 1.0 / 11.0;
  p = p * z2 + 1.0 / 9.0;
  p = p * z2 - 1.0 / 7.0;
  p = p * z2 + 1.0 / 5.0;
  p = p * z2 - 1.0 / 3.0;
  p = p * z2 + 1.0;
  return base + t * p;
}
float atan2_f(float y, float x) {
  if (isnan(x) || isnan(y)) return NAN_F;
  float ax = abs(x), ay = abs(y), r;
  if (isinf(ax) && isinf(ay)) {
    r = sign_bit(x) ? 3.0 * PI / 4.0 : PI / 4.0;
  } else if (ay == 0.0 && ax == 0.0) {
    r = sign_bit(x) ? PI : 0.0;
  } else if (ay <= ax) {
    r = atan01(ay / ax);
    if (sign_bit(x)) r = PI - r;
  } else {
    r = PI / 2.0 - atan01(ax / ay);
    if (sign_bit(x)) r = PI - r;
  }
  return copy_sign(r, y);
}
float atan_f(float x) {
  if (isnan(x)) return x;
  float ax = abs(x);
  float r = ax <= 1.0 ? atan01(ax) : PI / 2.0 - atan01(1.0 / ax);
  return copy_sign(r, x);
}

// erf: Taylor series near 0 (relative accuracy), elsewhere 1 - erfc with the
// Numerical Recipes rational erfc (fractional error < 1.2e-7 everywhere).
float erfc_pos(float z) {
  float t = 1.0 / (1.0 + 0.5 * z);
  return t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
         t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
         t * (-0.82215223 + t * 0.17087277)))))))));
}
float erf_f(float x) {
  if (isnan(x)) return x;
  if (abs(x) < 0.5) {
    float x2 = x * x;
    float p = -1.0 / 75600.0;
    p = p * x2 + 1.0 / 9360.0;
    p = p * x2 - 1.0 / 1320.0;
    p = p * x2 + 1.0 / 216.0;
    p = p * x2 - 1.0 / 42.0;
    p = p * x2 + 1.0 / 10.0;
    p = p * x2 - 1.0 / 3.0;
    p = p * x2 + 1.0;
    return 1.1283791670955126 * x * p;
  }
  float r = 1.0 - erfc_pos(abs(x));
  return x >= 0.0 ? r : -r;
}
// The standard normal CDF for GELU and its gradient, without erf_f's branch on small
// arguments: half of erfc at |x| / sqrt(2) (relative error about 1e-7 everywhere, so
// x * cdf keeps it too), chosen by sign. A warp of mixed small and large inputs then
// runs one path, not both (GELU ran at 0.85x CUDA's bandwidth on the H200).
float normal_cdf(float x) {
  float h = 0.5 * erfc_pos(abs(x) * 0.70710678118654752);
  return x >= 0.0 ? 1.0 - h : h;
}
float erfc_f(float x) {
  if (isnan(x)) return x;
  if (abs(x) < 0.5) return 1.0 - erf_f(x);
  float r = erfc_pos(abs(x));
  return x >= 0.0 ? r : 2.0 - r;
}
DEFINE_ERFINV_ESTIMATE(float, erfinv_estimate_f)

// M. Giles' single-precision erfinv approximation ("Approximating the erfinv
// function", GPU Computing Gems), then one Newton step on erf.
float erfinv_f(float x) {
  if (isnan(x) || abs(x) > 1.0) return NAN_F;
  if (abs(x) == 1.0) return copy_sign(INF_F, x);
  float r = erfinv_estimate_f(-log((1.0 - x) * (1.0 + x))) * x;
  float d = 1.1283791670955126 * exp(-r * r);
  if (d > 0.0 && abs(x) < 0.99) r -= (erf_f(r) - x) / d;
  return r;
}

// sin t and cos t for |t| <= pi/4 by Taylor series (sin(pi r), cos(pi r) for
// |r| <= 1/4): the driver's sin/tan are accurate in absolute terms only, and
// reflection formulas divide by them near their zeros.
float sin_taylor(float t) {
  float t2 = t * t;
  float p = -1.0 / 39916800.0;
  p = p * t2 + 1.0 / 362880.0;
  p = p * t2 - 1.0 / 5040.0;
  p = p * t2 + 1.0 / 120.0;
  p = p * t2 - 1.0 / 6.0;
  return t + t * t2 * p;
}
float sinpi_small(float r) { return sin_taylor(PI * r); }
float cos_taylor(float t) {
  float t2 = t * t;
  float p = 1.0 / 479001600.0;
  p = p * t2 - 1.0 / 3628800.0;
  p = p * t2 + 1.0 / 40320.0;
  p = p * t2 - 1.0 / 720.0;
  p = p * t2 + 1.0 / 24.0;
  p = p * t2 - 0.5;
  return 1.0 + t2 * p;
}
float cospi_small(float r) { return cos_taylor(PI * r); }
// 2/pi in binary, 32 bits after the point to a word: word w holds bits 32w + 1 to
// 32w + 32. A float's window starts at most at bit 103, so words past 6 are never read.
// A chain of selects, not an array: an indexed constant array becomes a function-local
// copy at every inlined call (ShaderStructure's function_arrays).
uint two_over_pi_word(int w) {
  return w == 0   ? 0xA2F9836Eu
         : w == 1 ? 0x4E441529u
         : w == 2 ? 0xFC2757D1u
         : w == 3 ? 0xF534DDC0u
         : w == 4 ? 0xDB629599u
         : w == 5 ? 0x3C439041u
         : w == 6 ? 0xFE5163ABu
                  : 0u;  // before the point: 0
}

// 32 bits of 2/pi from bit `start` on (bit 1 is the first after the point; those before
// it are 0).
uint two_over_pi_bits(int start) {
  const int w = (start - 1) >> 5;  // floor((start - 1) / 32), also below 0
  const int o = (start - 1) & 31;
  const uint a = two_over_pi_word(w);
  const uint b = two_over_pi_word(w + 1);
  return o == 0 ? a : (a << o) | (b >> (32 - o));
}

// |x| = k pi/2 + r with |r| <= pi/4 and q = k mod 4, for finite x (Payne and Hanek's
// reduction in integers: x's 24-bit significand times the 96 bits of 2/pi that reach
// the quadrant and the fraction). The drivers' sin and cos are specified only on
// [-pi, pi]; past about 1e7 lavapipe's return values in [-1, 1] with no relation to x.
float reduce_pio2_f(float x, out int q) {
  const uint bits = floatBitsToUint(abs(x));
  const int biased = int(bits >> 23);
  const uint m = (bits & 0x7FFFFFu) | (biased != 0 ? 0x800000u : 0u);
  const int s = max(biased, 1) - 151;  // |x| = m 2^(s + 1)
  uint h0, l0, h1, l1, h2, l2;
  umulExtended(m, two_over_pi_bits(s), h0, l0);
  umulExtended(m, two_over_pi_bits(s + 32), h1, l1);
  umulExtended(m, two_over_pi_bits(s + 64), h2, l2);
  // The product's low three words; |x| 2/pi mod 4 is it times 2^-94 (the word above
  // holds multiples of 4 only).
  uint c1, c2, c3;
  uint p0 = l2;
  uint p1 = uaddCarry(h2, l1, c1);
  uint p2 = uaddCarry(h1, l0, c2);
  p2 = uaddCarry(p2, c1, c3);
  uint k = p2 >> 30;
  uint f2 = p2 & 0x3FFFFFFFu;  // the fraction, f2 p1 p0: 94 bits
  float sgn = 1.0;
  if ((f2 & 0x20000000u) != 0u) {  // past 1/2: measured back from the next multiple
    k += 1u;
    sgn = -1.0;
    p0 = ~p0 + 1u;
    const uint borrow0 = p0 == 0u ? 1u : 0u;
    p1 = ~p1 + borrow0;
    const uint borrow1 = (borrow0 == 1u && p1 == 0u) ? 1u : 0u;
    f2 = (~f2 + borrow1) & 0x3FFFFFFFu;
  }
  q = int(k & 3u);
  const float f = float(f2) * 9.3132257461547852e-10 +  // 2^-30
                  (float(p1) * 2.1684043449710089e-19 +  // 2^-62
                   float(p0) * 5.0487097934144756e-29);  // 2^-94
  return sgn * f * 1.5707963267948966;
}

// sin, cos and tan in float: Taylor series on |r| <= pi/4 after the reduction above.
float sin_f(float x) {
  if (x == 0.0) return x;  // -0 stays -0
  if (abs(x) <= 0.78539816) return sin_taylor(x);
  if (isinf(x) || isnan(x)) return uintBitsToFloat(0x7fc00000u);
  int q;
  const float r = reduce_pio2_f(x, q);
  const float v = (q & 1) == 0 ? sin_taylor(r) : cos_taylor(r);
  return ((q & 2) == 0) == (x > 0.0) ? v : -v;
}
float cos_f(float x) {
  if (abs(x) <= 0.78539816) return cos_taylor(x);
  if (isinf(x) || isnan(x)) return uintBitsToFloat(0x7fc00000u);
  int q;
  const float r = reduce_pio2_f(x, q);
  const float v = (q & 1) == 0 ? cos_taylor(r) : sin_taylor(r);
  return (q == 0 || q == 3) ? v : -v;
}
float tan_f(float x) {
  if (x == 0.0) return x;
  if (abs(x) <= 0.78539816) return sin_taylor(x) / cos_taylor(x);
  if (isinf(x) || isnan(x)) return uintBitsToFloat(0x7fc00000u);
  int q;
  const float r = reduce_pio2_f(x, q);
  const float v = (q & 1) == 0 ? sin_taylor(r) / cos_taylor(r) : -cos_taylor(r) / sin_taylor(r);
  return x > 0.0 ? v : -v;
}

// sin(pi x) and pi / tan(pi x), from the exact reduction r = x - round(x) in
// [-1/2, 1/2] (sin(pi r) = +-sin(pi x), tan has period pi).
void sincospi_reduced(float x, out float s, out float c, out float r) {
  r = x - roundEven(x);
  float ar = abs(r);
  if (ar <= 0.25) {
    s = sinpi_small(ar);
    c = cospi_small(ar);
  } else {
    float u = 0.5 - ar;  // exact
    s = cospi_small(u);
    c = sinpi_small(u);
  }
}
float pi_over_tanpi(float x) {
  float s, c, r;
  sincospi_reduced(x, s, c, r);
  return copy_sign(PI * c / s, r);
}
float abs_sinpi(float x) {
  float s, c, r;
  sincospi_reduced(x, s, c, r);
  return s;
}
// lgamma(2 + z) for -3/4 <= z <= 1/2: its Taylor series, coefficients
// (-1)^k (zeta(k) - 1) / k (1 - Euler's gamma first), to z^20 (the terms fall as
// (|z| / 2)^k / k). Exactly 0 at z = 0. Written out: a constant array indexed in a loop
// made every special-function pipeline that inlines lgamma take 20 s to compile on
// lavapipe.
float lgamma_near_two(float z) {
  float p = 0.0000000476981016936398056576;
  p = p * z + -0.000000100432248239680996087;
  p = p * z + 0.000000212071848055546658692;
  p = p * z + -0.000000449246919876456604329;
  p = p * z + 0.000000955141213040741983286;
  p = p * z + -0.00000203921575380136623678;
  p = p * z + 0.00000437486678990748780418;
  p = p * z + -0.00000943948827526839590399;
  p = p * z + 0.0000205072127756706915532;
  p = p * z + -0.0000449262367381331417002;
  p = p * z + 0.0000994575127818085337146;
  p = p * z + -0.000223154758453579379761;
  p = p * z + 0.000509669524743042422336;
  p = p * z + -0.00119275391170326097711;
  p = p * z + 0.00289051033074152328575;
  p = p * z + -0.00738555102867398526627;
  p = p * z + 0.020580808427784547879;
  p = p * z + -0.0673523010531980951332;
  p = p * z + 0.322467033424113218236;
  p = p * z + 0.422784335098467139393;
  return z * p;
}
// lgamma for x > 0. Below 8, the series about 2 after an exact shift into [0.5, 2.5):
// lgamma's zeros at 1 and 2 keep their relative digits. (Shifting up to Stirling's series
// made lgamma(1 + 1e-3) the difference of two numbers near 8: 1e-5 off relatively.) One
// call of the series and one of log1p: every copy inlined costs compile time.
float lgamma_pos(float x) {
  float shift = 0.0;
  if (x < 0.5) {
    shift = -log(x);  // lgamma(x) = lgamma(x + 1) - log(x); log(x) dominates here
    x += 1.0;
  }
  if (x >= 8.0) {
    float inv = 1.0 / x, inv2 = inv * inv;
    float series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 -
                   inv2 * (1.0 / 1680.0))));
    return (x - 0.5) * log(x) - x + 0.91893853320467274 + series;
  }
  // lgamma(x) = lgamma(2 + z) -+ log(1 + t): below 1.25, z = t = x - 1 (the minus);
  // above, z = x - 2 after x -= 1 down into [1.5, 2.5), 1 + t the product of the steps.
  // x - 1 and x - 2 are exact in these ranges (Sterbenz).
  float z, t, sign = 1.0;
  if (x < 1.25) {
    z = x - 1.0;
    t = z;
    sign = -1.0;
  } else {
    float prod = 1.0;
    while (x >= 2.5) {
      x -= 1.0;
      prod *= x;
    }
    z = x - 2.0;
    t = prod - 1.0;
  }
  return shift + lgamma_near_two(z) + sign * log1p_f(t);
}
float lgamma_f(float x) {
  if (isnan(x)) return x;
  if (isinf(x)) return INF_F;
  if (x <= 0.0 && x == floor(x)) return INF_F;  // poles
  // Reflection below 1/2: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); sin(pi x) is
  // taken at x - round(x), which is exact, so that tiny |x| keeps its digits. The
  // polynomial, not the driver's sin: that is only absolutely accurate (NVIDIA's gives 0
  // for sin(3e-30), making lgamma(1e-30) infinite). One call of lgamma_pos either way.
  // Below 1e-8 in magnitude lgamma(x) = -log|x| - gamma x + ...: the reflection's
  // pi / |sin(pi x)| would overflow for subnormal x.
  if (abs(x) < 1e-8) return -log_f(abs(x));
  bool reflect = x < 0.5;
  float r = lgamma_pos(reflect ? 1.0 - x : x);
  return reflect ? log(PI / abs_sinpi(x)) - r : r;
}
// trigamma: reflection below 1/2, shift up by 6, then the asymptotic series.
float trigamma_f(float x) {
  float sgn = 1.0, acc = 0.0;
  if (x < 0.5) {
    sgn = -1.0;
    float s = abs_sinpi(x);  // relatively accurate near the poles
    acc = -(PI * PI) / (s * s);
    x = 1.0 - x;
  }
  for (int k = 0; k < 6; ++k) {
    acc += 1.0 / (x * x);
    x += 1.0;
  }
  float ixx = 1.0 / (x * x);
  acc += (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / x;
  return sgn * acc;
}
float digamma_f(float x) {
  if (isnan(x)) return x;
  if (x == 0.0) return copy_sign(INF_F, -x);
  float acc = 0.0;
  if (x < 0.0) {
    if (x == floor(x)) return NAN_F;
    // Reflection (GLSL has no recursion): psi(x) = psi(1 - x) - pi / tan(pi x).
    acc = -pi_over_tanpi(x);
    x = 1.0 - x;
  }
  if (isinf(x)) return x;
  while (x < 10.0) {
    acc -= 1.0 / x;
    x += 1.0;
  }
  float inv2 = 1.0 / (x * x);
  float series = inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 -
                 inv2 * (1.0 / 240.0 - inv2 * (1.0 / 132.0)))));
  return acc + log(x) - 0.5 / x - series;
}
