// exp, expm1, log, log1p and the sin / cos series in double precision: GLSL has them only in
// float. Include after common.glsl in a shader compiled with shaderFloat64.

// exp(x) = 2^k * exp(r), |r| <= ln2 / 2, with ln2 split in two (the high part has
// trailing zero bits, so k * LN2_HI is exact) and a degree-13 Taylor polynomial
// (truncation below 1e-17 relative).
double exp_d(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384LF) return 1.0LF / 0.0LF;
  if (x < -745.1332191019412LF) return 0.0LF;
  const double LN2_HI = 6.93147180369123816490e-01LF;
  const double LN2_LO = 1.90821492927058770002e-10LF;
  double k = floor(x * 1.4426950408889634LF + 0.5LF);
  // precise: drivers' optimizers may fold the two products into k * (LN2_HI + LN2_LO),
  // whose rounding is an error of k ulps (4e-15 relative near x = -35).
  precise double r = (x - k * LN2_HI) - k * LN2_LO;
  double p = 1.0LF / 6227020800.0LF;
  p = p * r + 1.0LF / 479001600.0LF;
  p = p * r + 1.0LF / 39916800.0LF;
  p = p * r + 1.0LF / 3628800.0LF;
  p = p * r + 1.0LF / 362880.0LF;
  p = p * r + 1.0LF / 40320.0LF;
  p = p * r + 1.0LF / 5040.0LF;
  p = p * r + 1.0LF / 720.0LF;
  p = p * r + 1.0LF / 120.0LF;
  p = p * r + 1.0LF / 24.0LF;
  p = p * r + 1.0LF / 6.0LF;
  p = p * r + 0.5LF;
  p = p * r + 1.0LF;
  p = p * r + 1.0LF;
  // Two steps keep 2^k representable near both ends of the range.
  int k1 = int(k) / 2;
  return ldexp(ldexp(p, k1), int(k) - k1);
}

// log(x) = e * ln2 + log(m) for x = m * 2^e, m in [0.5, 1): a float estimate of
// log(m) refined by two Newton steps on exp(y) = m (each doubles the digits).
double log_d(double x) {
  if (isnan(x) || x < 0.0LF) return 0.0LF / 0.0LF;
  if (x == 0.0LF) return -1.0LF / 0.0LF;
  if (isinf(x)) return x;
  if (x > 0.7LF && x < 1.4LF) {
    // Near 1 the Newton steps keep absolute, not relative, precision: there
    // log x = 2 atanh(s), s = (x - 1) / (x + 1) (x - 1 exact), |s| < 0.18, to s^25.
    double s = (x - 1.0LF) / (x + 1.0LF), s2 = s * s;
    double t = 1.0LF / 23.0LF + s2 / 25.0LF;
    t = 1.0LF / 21.0LF + s2 * t;
    t = 1.0LF / 19.0LF + s2 * t;
    t = 1.0LF / 17.0LF + s2 * t;
    t = 1.0LF / 15.0LF + s2 * t;
    t = 1.0LF / 13.0LF + s2 * t;
    t = 1.0LF / 11.0LF + s2 * t;
    t = 1.0LF / 9.0LF + s2 * t;
    t = 1.0LF / 7.0LF + s2 * t;
    t = 1.0LF / 5.0LF + s2 * t;
    t = 1.0LF / 3.0LF + s2 * t;
    t = 1.0LF + s2 * t;
    return 2.0LF * s * t;
  }
  int e, shift = 0;
  if (x < 2.2250738585072014e-308LF) {  // subnormal: drivers' frexp may not reach there
    x *= 18014398509481984.0LF;          // 2^54, exact
    shift = 54;
  }
  double m = frexp(x, e);
  double y = double(log(float(m)));
  y = y - 1.0LF + m * exp_d(-y);
  y = y - 1.0LF + m * exp_d(-y);
  return double(e - shift) * 0.6931471805599453094LF + y;
}

// log(1 + x) = log(u) x / (u - 1) for u = 1 + x rounded (Goldberg): the rounding of u
// cancels, so small x keep their digits.
double log1p_d(double x) {
  if (isnan(x) || isinf(x)) return x < 0.0LF ? 0.0LF / 0.0LF : x;
  double u = 1.0LF + x;
  if (u == 1.0LF) return x;
  return log_d(u) * (x / (u - 1.0LF));
}
// exp(x) - 1: Taylor to x^17 below 1/2 (truncation under 1e-21), else exp - 1.
double expm1_d(double x) {
  if (!(abs(x) < 0.5LF)) return isnan(x) ? x : exp_d(x) - 1.0LF;
  double p = 1.0LF / 355687428096000.0LF;
  p = p * x + 1.0LF / 20922789888000.0LF;
  p = p * x + 1.0LF / 1307674368000.0LF;
  p = p * x + 1.0LF / 87178291200.0LF;
  p = p * x + 1.0LF / 6227020800.0LF;
  p = p * x + 1.0LF / 479001600.0LF;
  p = p * x + 1.0LF / 39916800.0LF;
  p = p * x + 1.0LF / 3628800.0LF;
  p = p * x + 1.0LF / 362880.0LF;
  p = p * x + 1.0LF / 40320.0LF;
  p = p * x + 1.0LF / 5040.0LF;
  p = p * x + 1.0LF / 720.0LF;
  p = p * x + 1.0LF / 120.0LF;
  p = p * x + 1.0LF / 24.0LF;
  p = p * x + 1.0LF / 6.0LF;
  p = p * x + 0.5LF;
  p = p * x + 1.0LF;
  return p * x;
}
// sin and cos of |r| <= pi/4: Taylor series to r^17 and r^16 (below 2^-56 there).
double sin_poly_d(double r) {
  double r2 = r * r;
  double s = 1.0LF / 355687428096000.0LF;
  s = s * r2 - 1.0LF / 1307674368000.0LF;
  s = s * r2 + 1.0LF / 6227020800.0LF;
  s = s * r2 - 1.0LF / 39916800.0LF;
  s = s * r2 + 1.0LF / 362880.0LF;
  s = s * r2 - 1.0LF / 5040.0LF;
  s = s * r2 + 1.0LF / 120.0LF;
  s = s * r2 - 1.0LF / 6.0LF;
  s = s * r2 + 1.0LF / 1.0LF;
  return r * s;
}
double cos_poly_d(double r) {
  double r2 = r * r;
  double c = 1.0LF / 20922789888000.0LF;
  c = c * r2 - 1.0LF / 87178291200.0LF;
  c = c * r2 + 1.0LF / 479001600.0LF;
  c = c * r2 - 1.0LF / 3628800.0LF;
  c = c * r2 + 1.0LF / 40320.0LF;
  c = c * r2 - 1.0LF / 720.0LF;
  c = c * r2 + 1.0LF / 24.0LF;
  c = c * r2 - 1.0LF / 2.0LF;
  c = c * r2 + 1.0LF / 1.0LF;
  return c;
}
