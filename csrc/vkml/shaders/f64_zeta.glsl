// Hurwitz's zeta and polygamma of order n >= 2 in double precision, by the CPU's own
// methods (Cephes' zeta, ATen's calc_polygamma). Included after f64_pow_erf.glsl (pow_d)
// and f64_gamma.glsl (lgamma_d).

const double ZETA_A_D[12] = double[](12.0LF, -720.0LF, 30240.0LF, -1209600.0LF, 47900160.0LF,
    -1.8924375803183791606e9LF, 7.47242496e10LF, -2.950130727918164224e12LF,
    1.1646782814350067249e14LF, -4.5979787224074726105e15LF, 1.8152105401943546773e17LF,
    -7.1661652561756670113e18LF);
// zeta(x, q) = sum_k (k + q)^-x by Euler-Maclaurin summation.
double zeta_d(double x, double q) {
  const double MACHEP = 1.11022302462515654042e-16LF;
  if (x == 1.0LF) return 1.0LF / 0.0LF;
  if (x < 1.0LF) return 0.0LF / 0.0LF;
  if (q <= 0.0LF) {
    if (q == floor(q)) return 1.0LF / 0.0LF;
    if (x != floor(x)) return 0.0LF / 0.0LF;
  }
  double s = pow_d(q, -x), a = q, b = 0.0LF;
  int i = 0;
  while (i < 9 || a <= 9.0LF) {
    i += 1;
    a += 1.0LF;
    b = pow_d(a, -x);
    s += b;
    if (-MACHEP * s < b && b < MACHEP * s) return s;
    if (i > 100000) break;  // a huge negative q: the CPU would loop as long
  }
  double w = a;
  s += b * w / (x - 1.0LF);
  s -= 0.5LF * b;
  double aa = 1.0LF, k = 0.0LF;
  for (int j = 0; j < 12; ++j) {
    aa *= x + k;
    b /= w;
    double t = aa * b / ZETA_A_D[j];
    s = s + t;
    if (abs(t / s) < MACHEP) return s;
    k += 1.0LF;
    aa *= x + k;
    b /= w;
    k += 1.0LF;
  }
  return s;
}

double polygamma_d(double n, double x) {
  double sgn = mod(n, 2.0LF) == 1.0LF ? 1.0LF : -1.0LF;
  return sgn * exp_d(lgamma_d(n + 1.0LF)) * zeta_d(n + 1.0LF, x);
}
