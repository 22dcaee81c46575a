// lgamma, digamma and trigamma in double precision, for elementwise.comp's f64 special
// kernel and random_sample.comp's f64 variant: the float kernels' methods
// (float_math.glsl: reflection, a shift upwards, the asymptotic series) taken far enough
// for double; lgamma below 15 by its Taylor series about 2. Near digamma's zero
// (1.4616...) and lgamma's negative zeros the result is absolutely, not relatively,
// accurate (about 1e-15): the terms cancel there. Included after f64_math.glsl (log_d,
// log1p_d, sin_poly_d, cos_poly_d).

#extension GL_EXT_control_flow_attributes : require  // [[unroll]] on its tables

const double PI_D = 3.14159265358979323846LF;

// x - n with n the nearest integer: exact (Sterbenz), in [-1/2, 1/2].
double offset_from_int_d(double x) {
  double f = floor(x);
  return x - f >= 0.5LF ? x - (f + 1.0LF) : x - f;
}

// sin(pi r) and cos(pi r) for |r| <= 1/2: each polynomial where its argument is small,
// so that both keep their relative digits (near the poles of lgamma and digamma).
void sincospi_d(double r, out double s, out double c) {
  double a = abs(r);
  if (a <= 0.25LF) {
    s = sin_poly_d(PI_D * a);
    c = cos_poly_d(PI_D * a);
  } else {
    double b = PI_D * (0.5LF - a);
    s = cos_poly_d(b);
    c = sin_poly_d(b);
  }
  if (r < 0.0LF) s = -s;
}

// The magnitudes of the asymptotic series' coefficients, whose signs alternate:
// Bernoulli numbers B(2k) / (2k (2k - 1)) for Stirling's, B(2k) / 2k for digamma's.
const double STIRLING_D[8] = double[](1.0LF / 12.0LF, 1.0LF / 360.0LF, 1.0LF / 1260.0LF,
    1.0LF / 1680.0LF, 1.0LF / 1188.0LF, 691.0LF / 360360.0LF, 1.0LF / 156.0LF,
    3617.0LF / 122400.0LF);
const double DIGAMMA_ASYMPTOTIC_D[8] = double[](1.0LF / 12.0LF, 1.0LF / 120.0LF,
    1.0LF / 252.0LF, 1.0LF / 240.0LF, 1.0LF / 132.0LF, 691.0LF / 32760.0LF, 1.0LF / 12.0LF,
    3617.0LF / 8160.0LF);

// c[0] - t c[1] + t^2 c[2] - ... by Horner.
double alternating_d(double c[8], double t) {
  double s = c[7];
  [[unroll]] for (int k = 6; k >= 0; --k) s = c[k] - t * s;
  return s;
}

// lgamma(2 + z) for |z| <= 1/2: its Taylor series, coefficients (-1)^k (zeta(k) - 1) / k
// (1 - Euler's gamma first), to z^28, below 1e-19 at |z| = 1/2. Exactly 0 at z = 0.
const double LGAMMA_TWO[28] = double[](
    0.422784335098467139393LF,
    0.322467033424113218236LF,
    -0.0673523010531980951332LF,
    0.020580808427784547879LF,
    -0.00738555102867398526627LF,
    0.00289051033074152328575LF,
    -0.00119275391170326097711LF,
    0.000509669524743042422336LF,
    -0.000223154758453579379761LF,
    0.0000994575127818085337146LF,
    -0.0000449262367381331417002LF,
    0.0000205072127756706915532LF,
    -0.00000943948827526839590399LF,
    0.00000437486678990748780418LF,
    -0.00000203921575380136623678LF,
    0.000000955141213040741983286LF,
    -0.000000449246919876456604329LF,
    0.000000212071848055546658692LF,
    -0.000000100432248239680996087LF,
    0.0000000476981016936398056576LF,
    -0.0000000227110946089431649103LF,
    0.0000000108386592148969540911LF,
    -0.00000000518347504197004665512LF,
    0.00000000248367454380247831719LF,
    -0.00000000119214014058609120744LF,
    0.000000000573136724167886201333LF,
    -0.000000000275952288512423314518LF,
    0.000000000133047643742444894815LF);

double lgamma_near_two_d(double z) {
  double p = LGAMMA_TWO[27];
  [[unroll]] for (int k = 26; k >= 0; --k) p = p * z + LGAMMA_TWO[k];
  return z * p;
}

// x >= 1/2. Below 15, the series about 2 after shifting into [1.5, 2.5) (the shift's
// factors are exact, its terms of one sign: no cancellation, so lgamma's zeros at 1 and 2
// keep their relative digits); from 15, Stirling's series to x^-15, below 2^-60.
double lgamma_pos_d(double x) {
  if (x < 1.5LF) return lgamma_near_two_d(x - 1.0LF) - log1p_d(x - 1.0LF);
  if (x < 15.0LF) {
    double prod = 1.0LF;
    while (x >= 2.5LF) {
      x -= 1.0LF;
      prod *= x;
    }
    return lgamma_near_two_d(x - 2.0LF) + log_d(prod);
  }
  double inv = 1.0LF / x;
  double series = inv * alternating_d(STIRLING_D, inv * inv);
  return (x - 0.5LF) * log_d(x) - x + 0.91893853320467274178LF + series;
}

double lgamma_d(double x) {
  if (isnan(x)) return x;
  if (isinf(x) || (x <= 0.0LF && x == floor(x))) return 1.0LF / 0.0LF;  // and the poles
  // Below 2^-60 lgamma(x) = -log|x| - gamma x + ...: the reflection's pi / |sin(pi x)|
  // would overflow for subnormal x.
  if (abs(x) < 8.6736173798840355e-19LF) return -log_d(abs(x));
  if (x < 0.5LF) {  // reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    double s, c;
    sincospi_d(offset_from_int_d(x), s, c);
    return log_d(PI_D / abs(s)) - lgamma_pos_d(1.0LF - x);
  }
  return lgamma_pos_d(x);
}

double digamma_d(double x) {
  if (isnan(x)) return x;
  if (x == 0.0LF) return (floatBitsToUint(float(x)) >> 31) != 0u ? 1.0LF / 0.0LF : -1.0LF / 0.0LF;
  double acc = 0.0LF;
  if (x < 0.0LF) {  // reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
    if (x == floor(x)) return 0.0LF / 0.0LF;
    double s, c;
    sincospi_d(offset_from_int_d(x), s, c);
    acc = -PI_D * c / s;
    x = 1.0LF - x;
  }
  if (isinf(x)) return x;
  while (x < 15.0LF) {
    acc -= 1.0LF / x;
    x += 1.0LF;
  }
  double inv2 = 1.0LF / (x * x);
  return acc + log_d(x) - 0.5LF / x - inv2 * alternating_d(DIGAMMA_ASYMPTOTIC_D, inv2);
}

// trigamma: reflection below 1/2 (sin(pi x) from sincospi_d, exact at the poles, where
// the CPU's rounded pi x gives ~1e32), a shift upwards to 15 and the asymptotic series to
// B(14): within 1e-15, where the CPU's (ATen's calc_trigamma: six shifts, three terms)
// is off by up to 4e-10.
double trigamma_d(double x) {
  double sign = 1.0LF, acc = 0.0LF;
  if (x < 0.5LF) {
    sign = -1.0LF;
    double s, c;
    sincospi_d(offset_from_int_d(x), s, c);
    acc -= (PI_D * PI_D) / (s * s);
    x = 1.0LF - x;
  }
  for (int i = 0; i < 15 && x < 15.0LF; ++i) {
    acc += 1.0LF / (x * x);
    x += 1.0LF;
  }
  double t = 1.0LF / (x * x);
  double series =
      1.0LF / 6.0LF -
      t * (1.0LF / 30.0LF -
           t * (1.0LF / 42.0LF -
                t * (1.0LF / 30.0LF -
                     t * (5.0LF / 66.0LF - t * (691.0LF / 2730.0LF - t * (7.0LF / 6.0LF))))));
  acc += (1.0LF + 0.5LF / x + t * series) / x;
  return sign * acc;
}
