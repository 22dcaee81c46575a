// pow, erf, erfc, erfcx, log_ndtr and erfinv in double precision for elementwise.comp's f64 kernel
// (GLSL has none of them in double). Included there after f64_math.glsl and
// sub_exact_product.
#include "erfinv_estimate.glsl"

const double LOG_TWO_HI = 6.93147180369123816490e-01LF;  // trailing zeros: e * it is exact
const double LOG_TWO_LO = 1.90821492927058770002e-10LF;
const double INV_SQRT_PI_D = 0.56418958354775628695LF;

// a + b = s + err exactly (Knuth's two-sum, any magnitudes).
void two_sum_d(double a, double b, out double s, out double err) {
  precise double sum = a + b;
  precise double bv = sum - a;
  precise double e = (a - (sum - bv)) + (b - bv);
  s = sum;
  err = e;
}

// log(x) = hi + lo for finite x > 0, to about 2^-70 relative: pow multiplies log's
// error by its exponent, so one double's rounding (|y log x| ulps) would show.
// log x = e ln2 + 2 atanh(s) with x = m 2^e, m in [sqrt(1/2), sqrt(2)),
// s = (m - 1) / (m + 1) in two parts and |s| < 0.172; the series' tail past 2s is
// under 1 % of it, so its own rounding stays far below the result's.
void log_parts_d(double x, out double hi, out double lo) {
  int shift = 0;
  if (x < 2.2250738585072014e-308LF) {  // subnormal: drivers' frexp may not reach there
    x *= 18014398509481984.0LF;          // 2^54
    shift = -54;
  }
  int e;
  double m = frexp(x, e);
  if (m < 0.70710678118654752LF) {
    m *= 2.0LF;
    e -= 1;
  }
  e += shift;
  precise double num = m - 1.0LF;  // exact (Sterbenz)
  double den, den_lo;
  two_sum_d(1.0LF, m, den, den_lo);
  precise double s = num / den;
  precise double s_lo = (sub_exact_product(num, s, den) - s * den_lo) / den;
  double s2 = s * s;
  double p = 2.0LF / 25.0LF;
  p = 2.0LF / 23.0LF + s2 * p;
  p = 2.0LF / 21.0LF + s2 * p;
  p = 2.0LF / 19.0LF + s2 * p;
  p = 2.0LF / 17.0LF + s2 * p;
  p = 2.0LF / 15.0LF + s2 * p;
  p = 2.0LF / 13.0LF + s2 * p;
  p = 2.0LF / 11.0LF + s2 * p;
  p = 2.0LF / 9.0LF + s2 * p;
  p = 2.0LF / 7.0LF + s2 * p;
  p = 2.0LF / 5.0LF + s2 * p;
  p = 2.0LF / 3.0LF + s2 * p;
  precise double tail = s * s2 * p;
  precise double two_s = 2.0LF * s;
  precise double h = two_s + tail;
  precise double h_lo = (tail - (h - two_s)) + 2.0LF * s_lo;
  double sum, err;
  two_sum_d(double(e) * LOG_TWO_HI, h, sum, err);  // e * LOG_TWO_HI is exact
  hi = sum;
  lo = err + h_lo + double(e) * LOG_TWO_LO;
}

// x^y for finite x > 0 and finite y: exp of y log x carried in two doubles, so the
// result is within a few ulps where a plain exp(y * log(x)) loses |y log x| ulps.
double pow_positive_d(double x, double y) {
  double hi, lo;
  log_parts_d(x, hi, lo);
  precise double p = y * hi;
  if (!(abs(p) < 1000.0LF)) return exp_d(p);  // overflows or underflows either way
  precise double err = y * lo - sub_exact_product(p, y, hi);  // y (hi + lo) - p
  precise double s = p + err;
  precise double tail = err - (s - p);
  double r = exp_d(s);
  if (isinf(r)) return r;  // inf * tail would be a NaN where tail < 0
  return r + r * tail;
}

// pow with C's special cases, as std::pow on the CPU.
double pow_d(double a, double b) {
  if (b == 0.0LF || a == 1.0LF) return 1.0LF;
  if (isnan(a) || isnan(b)) return a + b;
  if (b == 1.0LF) return a;
  if (b == 2.0LF) return a * a;
  bool odd = abs(b) < 9007199254740992.0LF && trunc(b) == b && mod(b, 2.0LF) != 0.0LF;
  if (isinf(b)) {
    double m = abs(a);
    if (m == 1.0LF) return 1.0LF;
    return ((m < 1.0LF) == (b > 0.0LF)) ? 0.0LF : 1.0LF / 0.0LF;
  }
  if (a == 0.0LF || isinf(a)) {
    double r = ((a == 0.0LF) == (b < 0.0LF)) ? 1.0LF / 0.0LF : 0.0LF;
    return (odd && sign_bit(a)) ? -r : r;
  }
  if (a > 0.0LF) return pow_positive_d(a, b);
  if (b != trunc(b)) return 0.0LF / 0.0LF;
  double r = pow_positive_d(-a, b);
  return odd ? -r : r;
}

// exp(-x^2) with x^2 taken exactly (two parts): its rounding alone would be an error
// of x^2 ulps, 36 at x = 6.
double exp_minus_square_d(double x) {
  precise double s = x * x;
  precise double t = -sub_exact_product(s, x, x);  // x^2 - s
  double e = exp_d(-s);
  return e - e * t;
}

// erf for |x| < 2 from the series of positive terms
// erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (1 3 5 ... (2n+1)): no cancellation.
double erf_series_d(double x) {
  double x2 = 2.0LF * x * x, term = x, sum = x;
  for (int n = 1; n < 80 && abs(term) > 1e-17LF * abs(sum); ++n) {
    term *= x2 / double(2 * n + 1);
    sum += term;
  }
  return 2.0LF * INV_SQRT_PI_D * exp_minus_square_d(x) * sum;
}

// erfc for x >= 3/4 from the continued fraction of the upper incomplete gamma
// function Gamma(1/2, x^2) = sqrt(pi) erfc(x):
// erfc(x) = exp(-x^2) x / sqrt(pi) / (b0 + a1 / (b1 + a2 / (b2 + ...))),
// b_n = x^2 + 2n + 1/2, a_n = -n (n - 1/2), summed from its tail up: within 5e-16
// with 150 terms from x = 3/4 on (100 from 1, 60 from 1.5, 40 from 2), where
// Lentz's forward evaluation loses ten times that to rounding.
// exp(x^2) erfc(x), the fraction without its exp(-x^2) (x^2 must not overflow).
double erfc_fraction_scaled_d(double x) {
  double z = x * x;
  int terms = x < 1.0LF ? 150 : (x < 1.5LF ? 100 : (x < 2.0LF ? 60 : 40));
  double f = z + double(2 * terms) + 0.5LF;
  for (int n = terms; n > 0; --n) f = (z + double(2 * n - 2) + 0.5LF) - double(n) * (double(n) - 0.5LF) / f;
  return x * INV_SQRT_PI_D / f;
}
double erfc_fraction_d(double x) {
  if (x > 27.3LF) return 0.0LF;  // below the smallest subnormal
  return exp_minus_square_d(x) * erfc_fraction_scaled_d(x);
}

double erfc_d(double x) {
  if (isnan(x)) return x;
  if (x < 0.75LF) {
    // 1 - erf loses under two bits down to erfc(3/4) = 0.29; below -6 it is 2.
    if (x < -6.0LF) return 2.0LF;
    return x < -0.75LF ? 2.0LF - erfc_fraction_d(-x) : 1.0LF - erf_series_d(x);
  }
  return erfc_fraction_d(x);
}

double erf_d(double x) {
  if (isnan(x)) return x;
  double ax = abs(x);
  if (ax < 2.0LF) return erf_series_d(x);
  double r = ax > 6.0LF ? 1.0LF : 1.0LF - erfc_fraction_d(ax);
  return copy_sign(r, x);
}

// exp(x^2), x^2 taken in two parts (its rounding would cost x^2 ulps).
double exp_square_d(double x) {
  precise double s = x * x;
  precise double t = -sub_exact_product(s, x, x);  // x^2 - s
  double e = exp_d(s);
  return e + e * t;
}

// erfcx(x) = exp(x^2) erfc(x) for x >= 0: from 3/4 up the scaled continued fraction
// (nothing to cancel), 1 / (x sqrt(pi)) where x^2 would overflow; below, the product.
double erfcx_pos_d(double x) {
  if (x < 0.75LF) return exp_square_d(x) * erfc_d(x);
  return x > 1e150LF ? INV_SQRT_PI_D / x : erfc_fraction_scaled_d(x);
}

// For x < 0 by the reflection erfcx(x) = 2 exp(x^2) - erfcx(-x).
double erfcx_d(double x) {
  if (isnan(x)) return x;
  if (x >= 0.0LF) return erfcx_pos_d(x);
  if (x < -26.7LF) return 1.0LF / 0.0LF;  // exp(x^2) overflows
  return 2.0LF * exp_square_d(x) - erfcx_pos_d(-x);
}

// log of the standard normal CDF: through erfcx where the CDF is small (its log is then
// a sum, not the log of an underflowing number), else log1p of the upper tail.
double log_ndtr_d(double x) {
  double t = x * 0.70710678118654752440LF;
  if (x < -1.0LF) return log_d(erfcx_d(-t) * 0.5LF) - t * t;
  return log1p_d(-0.5LF * erfc_d(t));
}

// erfinv: Giles' single-precision polynomial (erfinv_estimate.glsl), evaluated in
// double (about 1e-7 relative where it was fit, within float's range), then refined.
// Below |y| = 1/2: two Halley steps on erf(x) = |y|, each tripling the digits
// (erf'' = -2x erf', so Halley's step is dx / (1 + x dx) with Newton's dx). From 1/2
// on: Newton's steps on log erfc(x) = log(1 - |y|), with 1 - |y| exact there (erf(x)
// - |y| would cancel its digits) and the logarithm nearly linear in the tail, so
// they converge from the polynomial's estimate even 2 % off, where |y| is within
// 1e-15 of 1, past the range it was fit on.
DEFINE_ERFINV_ESTIMATE(double, erfinv_estimate_d)

double erfinv_d(double y) {
  if (isnan(y) || abs(y) > 1.0LF) return 0.0LF / 0.0LF;
  if (abs(y) == 1.0LF) return copy_sign(1.0LF / 0.0LF, y);
  if (y == 0.0LF) return y;  // keeps -0.0
  double ay = abs(y);
  double x = erfinv_estimate_d(-log_d((1.0LF - ay) * (1.0LF + ay))) * ay;
  if (ay < 0.5LF) {
    for (int i = 0; i < 2; ++i) {
      double dx = (erf_d(x) - ay) / (2.0LF * INV_SQRT_PI_D * exp_minus_square_d(x));
      x -= dx / (1.0LF + x * dx);
    }
  } else {
    double target = log_d(1.0LF - ay);
    for (int i = 0; i < 8; ++i) {
      double e = erfc_d(x);
      double dx = (log_d(e) - target) * e / (-2.0LF * INV_SQRT_PI_D * exp_minus_square_d(x));
      x -= dx;
      if (abs(dx) <= 1e-17LF * x) break;
    }
  }
  return copy_sign(x, y);
}
