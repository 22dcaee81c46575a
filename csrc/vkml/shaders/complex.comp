#version 450
// Complex64 math, one element per thread over contiguous operands: the op is
// specialization constant 0 (an op code of op_codes.h). Formulas follow the C99
// complex functions PyTorch's CPU kernels call (principal branches, the sign of
// zero imaginary parts kept); the real functions underneath are float_math.glsl's,
// accurate in relative terms where the driver's are not.
//! dtypes f32
#include "common.glsl"
#include "op_codes.h"
#include "complex_push.h"

#define WG 256
layout(local_size_x = WG) in;
layout(constant_id = 0) const int OP = 0;

layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufC64 { vec2 v[]; };

#define NAN_F uintBitsToFloat(0x7fc00000u)
#define INF_F uintBitsToFloat(0x7f800000u)
#define PI 3.14159265358979323846
bool sign_bit(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
float copy_sign(float mag, float sgn) { return sign_bit(sgn) ? -abs(mag) : abs(mag); }
#include "float_math.glsl"

const float LN2 = 0.69314718055994531;
const float LN10 = 2.30258509299404568;

float hypot_c(float a, float b) {
  a = abs(a);
  b = abs(b);
  if (isinf(a) || isinf(b)) return INF_F;
  float m = max(a, b), n = min(a, b);
  if (m == 0.0) return 0.0;
  float r = n / m;
  return m * sqrt(1.0 + r * r);
}

float sinh_f(float x) {
  float ax = abs(x);
  float r;
  if (ax < 1.0) {
    float e = expm1_f(ax);
    r = 0.5 * (e + e / (e + 1.0));
  } else {
    float t = exp(0.5 * ax);
    r = (0.5 * t) * t - 0.5 / (t * t);
  }
  return copy_sign(r, x);
}
float cosh_f(float x) {
  float t = exp(0.5 * abs(x));
  return (0.5 * t) * t + 0.5 / (t * t);
}

vec2 cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
// 1 / z, scaled so that |z|^2 neither overflows nor underflows.
vec2 crecip(vec2 z) {
  float s = max(abs(z.x), abs(z.y));
  if (s == 0.0) return vec2(INF_F, NAN_F);
  if (isinf(s)) return vec2(copy_sign(0.0, z.x), -copy_sign(0.0, z.y));
  vec2 a = z / s;
  float d = dot(a, a);
  return vec2(a.x / d, -a.y / d) / s;
}
vec2 cdiv(vec2 a, vec2 b) { return cmul(a, crecip(b)); }
vec2 cexp(vec2 z) {
  if (z.y == 0.0) return vec2(exp(z.x), z.y);
  if (isinf(z.x) && !(abs(z.y) <= 3.0e38)) {  // C99: e^-inf is 0, e^+inf inf, whatever y
    return z.x < 0.0 ? vec2(0.0) : vec2(INF_F, NAN_F);
  }
  float e = exp(z.x);
  return vec2(e * cos_f(z.y), e * sin_f(z.y));
}
vec2 clog(vec2 z) { return vec2(log_f(hypot_c(z.x, z.y)), atan2_f(z.y, z.x)); }
vec2 csqrt(vec2 z) {
  if (z.x == 0.0 && z.y == 0.0) return vec2(0.0, z.y);
  if (isinf(z.y)) return vec2(INF_F, z.y);
  float r = hypot_c(z.x, z.y);
  if (z.x >= 0.0) {
    float t = sqrt(0.5 * (r + z.x));
    return vec2(t, z.y / (2.0 * t));
  }
  float t = sqrt(0.5 * (r - z.x));
  return vec2(abs(z.y) / (2.0 * t), copy_sign(t, z.y));
}
// tanh by Kahan's formula; far from 0 the real part is +-1 and the imaginary part
// 4 sin(y) cos(y) e^(-2|x|).
vec2 ctanh(vec2 z) {
  if (abs(z.x) > 10.0) {
    float e = exp(-2.0 * abs(z.x));
    return vec2(copy_sign(1.0, z.x), 4.0 * sin_f(z.y) * cos_f(z.y) * e);
  }
  float t = tan_f(z.y);
  float b = 1.0 + t * t;
  float s = sinh_f(z.x);
  float rho = sqrt(1.0 + s * s);
  float d = 1.0 + b * s * s;
  return vec2(b * rho * s / d, t / d);
}
// i z and -i z.
vec2 times_i(vec2 z) { return vec2(-z.y, z.x); }
vec2 times_minus_i(vec2 z) { return vec2(z.y, -z.x); }
vec2 clog1p(vec2 z) {
  // |1 + z|^2 = 1 + (2x + x^2 + y^2): the real part through log1p keeps small z exact.
  float s = 2.0 * z.x + z.x * z.x + z.y * z.y;
  if (abs(s) < 0.5) return vec2(0.5 * log1p_f(s), atan2_f(z.y, 1.0 + z.x));
  return clog(vec2(1.0, 0.0) + z);
}
// asinh(z) = log(z + sqrt(z^2 + 1)) = log1p(z + z^2 / (sqrt(z^2 + 1) + 1)), exact for
// small z, on the half plane x >= 0 where the sum does not cancel (odd symmetry for
// the other).
vec2 casinh(vec2 z) {
  bool flip = sign_bit(z.x);
  vec2 a = flip ? -z : z;
  vec2 u = cmul(a, a);
  vec2 r = clog1p(a + cdiv(u, csqrt(u + vec2(1.0, 0.0)) + vec2(1.0, 0.0)));
  return flip ? -r : r;
}
vec2 catanh(vec2 z) { return 0.5 * (clog1p(z) - clog1p(-z)); }
vec2 cexpm1(vec2 z) {
  // e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y / 2), without cancellation near 0.
  float h = sin_f(0.5 * z.y);
  return vec2(expm1_f(z.x) * cos_f(z.y) - 2.0 * h * h, exp(z.x) * sin_f(z.y));
}
// exp(w log z), as the CPU's cpow: at z = 0, log z = -inf, and 0^w is 0 where Re w > 0.
vec2 cpow(vec2 z, vec2 w) { return cexp(cmul(w, clog(z))); }

vec2 apply(vec2 z, vec2 w) {
  switch (OP) {
    case OP_EXP: return cexp(z);
    case OP_EXP2: return cexp(z * LN2);
    case OP_EXPM1: return cexpm1(z);
    case OP_LOG: return clog(z);
    case OP_LOG2: return clog(z) / LN2;
    case OP_LOG10: return clog(z) / LN10;
    case OP_LOG1P: return clog1p(z);
    case OP_SQRT: return csqrt(z);
    case OP_RSQRT: return crecip(csqrt(z));
    case OP_RECIPROCAL: return crecip(z);
    case OP_SIGMOID: return crecip(vec2(1.0, 0.0) + cexp(-z));
    case OP_SILU: return cdiv(z, vec2(1.0, 0.0) + cexp(-z));  // the CPU's z / (1 + e^-z)
    case OP_SINC: {  // sin(pi z) / (pi z), and 1 at 0
      if (z == vec2(0.0)) return vec2(1.0, 0.0);
      vec2 p = float(PI) * z;
      return cdiv(vec2(sin_f(p.x) * cosh_f(p.y), cos_f(p.x) * sinh_f(p.y)), p);
    }
    case OP_SIN: return vec2(sin_f(z.x) * cosh_f(z.y), cos_f(z.x) * sinh_f(z.y));
    case OP_COS: return vec2(cos_f(z.x) * cosh_f(z.y), -sin_f(z.x) * sinh_f(z.y));
    case OP_TAN: return times_minus_i(ctanh(times_i(z)));
    case OP_SINH: return vec2(sinh_f(z.x) * cos_f(z.y), cosh_f(z.x) * sin_f(z.y));
    case OP_COSH: return vec2(cosh_f(z.x) * cos_f(z.y), sinh_f(z.x) * sin_f(z.y));
    case OP_TANH: return ctanh(z);
    case OP_ASINH: return casinh(z);
    case OP_ASIN: return times_minus_i(casinh(times_i(z)));
    case OP_ACOS: {
      vec2 a = times_minus_i(casinh(times_i(z)));
      return vec2(PI / 2.0 - a.x, -a.y);
    }
    case OP_ACOSH: {
      vec2 r = clog(z + cmul(csqrt(z + vec2(1.0, 0.0)), csqrt(z - vec2(1.0, 0.0))));
      return r;
    }
    case OP_ATANH: return catanh(z);
    case OP_ATAN: return times_minus_i(catanh(times_i(z)));
    case OP_POW: return cpow(z, w);
    case OP_DIV: return cdiv(z, w);
    default: return vec2(NAN_F, NAN_F);
  }
}

void main() {
  uint i = linear_id();
  if (i >= pc.numel) return;
  vec2 z = BufC64(pc.z).v[i];
  vec2 w = (pc.flags & COMPLEX_W_SCALAR) != 0u ? vec2(pc.w_re, pc.w_im)
                                                : (pc.w != 0ul ? BufC64(pc.w).v[i] : vec2(0.0));
  BufC64(pc.dst).v[i] = apply(z, w);
}
