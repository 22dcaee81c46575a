#version 450
#extension GL_EXT_control_flow_attributes : require
// Elementwise ops (unary, binary, ternary) over up to three collapsed dims with
// per-operand strides; the op is specialization constant 0 (see op_codes.h).
// f16 and bf16 are storage formats: they compute in fp32. f64 (needs
// shaderFloat64) computes in double: the ops GLSL has in double, and in f64_special
// the math of f64_math.glsl and f64_pow_erf.glsl; the adapter runs the others
// elsewhere. The special functions
// (special_functions.glsl, op codes 70-89 and 242-258 but gcd/lcm) live only in
// the *_special variants: they quadruple the shader, and every pipeline of the
// common ops would pay for them in driver compile time. So does all of f64's math
// (exp/log, trigonometry, activations, pow, erf, ...): with it in the f64 variant,
// every f64 pipeline took 0.6 s to create on lavapipe (Mesa 22.3), its disk cache
// notwithstanding; without it, an add takes 0.02 s and a math op 1.2 s.
//! dtypes f32 f16 bf16 f64 i32 i64 i16 i8 u8
//! dtypes f32 f16 bf16 f64 i32 i64 i16 i8 u8 suffix=cmp -DOUT_BOOL
//! dtypes f32 f16 bf16 f64 suffix=special -DWITH_SPECIAL
//! dtypes f32 f16 bf16 suffix=table -DTABLE
#ifdef ST_BF16
#define NEED_I16  // bf16 bits move through int16 arithmetic
#endif
#include "common.glsl"
#include "op_codes.h"
#include "device_error.glsl"
#include "elementwise_push.h"

const uint WG = ELEMENTWISE_WG;
layout(local_size_x = WG) in;
layout(constant_id = 0) const int OP = 0;

#if defined(ST_F32)
#define BUF BufF32
#define CT float
#define IS_FLOAT 1
#define HAS_TRANSC 1
#elif defined(ST_F16)
#define BUF BufF16
#define CT float
#define IS_FLOAT 1
#define HAS_TRANSC 1
#elif defined(ST_BF16)
#define BUF BufU16
#define CT float
#define IS_FLOAT 1
#define HAS_TRANSC 1
#elif defined(ST_F64)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#define BUF BufF64
#define CT double
#define IS_FLOAT 1
#elif defined(ST_I32)
#define BUF BufI32
#define CT int
#define INT_BITS 32
#elif defined(ST_I64)
#define BUF BufI64
#define CT int64_t
#define INT_BITS 64
#elif defined(ST_I16)  // int16 and int8 compute in int32 and wrap when stored, as the CPU
#define BUF BufI16
#define CT int
#define INT_BITS 16
#elif defined(ST_I8)
#define BUF BufI8
#define CT int
#define INT_BITS 8
#else
#define BUF BufU8
#define CT int
#define INT_BITS 8
#endif

#ifdef TABLE
// The *_table variants run multi-tensor ops (see ops/elementwise_batch.h):
// ptr[0] is a table of TableRecords, one per contiguous tensor set, numel the record
// count and size[0] the workgroups of all records. Each record's workgroups
// are consecutive; every thread takes four elements. Operands come from the record
// (OPERAND, SLOT); the other variants read the push constants directly, which keeps
// them fast on drivers that would not fold the copy.
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Table { TableRecord r[]; };

uint64_t g_ptr[4];
uint64_t g_s[3];
uint g_splat = 0u;
#define OPERAND(k) g_ptr[k]
#define SLOT(k) g_s[k]
#else
#define OPERAND(k) pc.ptr[k]
#define SLOT(k) pc.s[k]
#endif

CT scalar_value(int k) {
#if defined(ST_F64)
  return packDouble2x32(uvec2(uint(SLOT(k) & 0xffffffffUL), uint(SLOT(k) >> 32)));
#elif defined(IS_FLOAT)
  return uintBitsToFloat(uint(SLOT(k) & 0xffffffffUL));
#elif defined(ST_I64)
  return int64_t(SLOT(k));
#else
  return int(uint(SLOT(k) & 0xffffffffUL));
#endif
}

#ifdef ST_F64
// Float op parameters of the float64 kernels: doubles, one per slot (see op_codes.h).
double dparam(int j) {
  uint64_t v = SLOT(j == 0 ? 2 : j == 1 ? 0 : 1);
  return packDouble2x32(uvec2(uint(v & 0xffffffffUL), uint(v >> 32)));
}
#endif

// Float op parameters, two per slot (see op_codes.h).
float fparam(int j) {
  uint64_t v = SLOT(j < 2 ? 2 : 0);
  return uintBitsToFloat(uint((j & 1) == 0 ? (v & 0xffffffffUL) : (v >> 32)));
}

CT load(int k, uint off) {
  if ((pc.flags & (EW_SCALAR0 << k)) != 0u) return scalar_value(k);
  if (k == 0 && (pc.flags & EW_IN0_BOOL) != 0u) return CT(BufU8(OPERAND(1)).v[off]);
#if defined(ST_BF16)
  return bf16_to_f32(uint(BUF(OPERAND(k + 1)).v[off]));
#else
  return CT(BUF(OPERAND(k + 1)).v[off]);
#endif
}

#ifdef IS_FLOAT
#define NAN_F CT(uintBitsToFloat(0x7fc00000u))
#define INF_F CT(uintBitsToFloat(0x7f800000u))
#define PI 3.14159265358979323846
bool sign_bit(CT x) {
#ifdef ST_F64
  return (unpackDouble2x32(x).y >> 31) != 0u;
#else
  return (floatBitsToUint(x) >> 31) != 0u;
#endif
}
CT copy_sign(CT mag, CT sgn) { return sign_bit(sgn) ? -abs(mag) : abs(mag); }
#endif

#ifdef HAS_TRANSC
#include "float_math.glsl"
#endif

#if defined(ST_F64) && defined(WITH_SPECIAL)  // the f64 math: only in f64_special
#include "f64_math.glsl"
const double INV_LN2_D = 1.4426950408889634074LF;
double tanh_d(double x) {
  if (isnan(x)) return x;
  double ax = abs(x);
  if (ax > 20.0LF) return sign(x);
  double e = expm1_d(2.0LF * ax);
  return copy_sign(e / (e + 2.0LF), x);
}
// log2 from the mantissa in [sqrt(1/2), sqrt(2)), where log_d keeps relative precision:
// exact for powers of two, as the CPU's, and no cancellation just below 1.
double log2_d(double x) {
  if (isnan(x) || isinf(x) || x <= 0.0LF) return log_d(x) * INV_LN2_D;
  int e, shift = 0;
  if (x < 2.2250738585072014e-308LF) {  // subnormal: drivers' frexp may not reach there
    x *= 18014398509481984.0LF;          // 2^54, exact
    shift = 54;
  }
  double m = frexp(x, e);
  if (m < 0.70710678118654752LF) {
    m *= 2.0LF;
    e -= 1;
  }
  return double(e - shift) + log_d(m) * INV_LN2_D;
}
// atan on [0, 1] in float64: reduced to |z| <= tan(pi/8) around 0 or pi/4, then its
// series to z^43 (truncation below 2^-55 there).
double atan01_d(double t) {
  double base = 0.0LF;
  if (t > 0.41421356237309505LF) {
    base = 0.78539816339744830962LF;
    t = (t - 1.0LF) / (t + 1.0LF);
  }
  double z2 = t * t;
  double p = -1.0LF / 43.0LF;
  p = p * z2 + 1.0LF / 41.0LF;
  p = p * z2 - 1.0LF / 39.0LF;
  p = p * z2 + 1.0LF / 37.0LF;
  p = p * z2 - 1.0LF / 35.0LF;
  p = p * z2 + 1.0LF / 33.0LF;
  p = p * z2 - 1.0LF / 31.0LF;
  p = p * z2 + 1.0LF / 29.0LF;
  p = p * z2 - 1.0LF / 27.0LF;
  p = p * z2 + 1.0LF / 25.0LF;
  p = p * z2 - 1.0LF / 23.0LF;
  p = p * z2 + 1.0LF / 21.0LF;
  p = p * z2 - 1.0LF / 19.0LF;
  p = p * z2 + 1.0LF / 17.0LF;
  p = p * z2 - 1.0LF / 15.0LF;
  p = p * z2 + 1.0LF / 13.0LF;
  p = p * z2 - 1.0LF / 11.0LF;
  p = p * z2 + 1.0LF / 9.0LF;
  p = p * z2 - 1.0LF / 7.0LF;
  p = p * z2 + 1.0LF / 5.0LF;
  p = p * z2 - 1.0LF / 3.0LF;
  p = p * z2 + 1.0LF / 1.0LF;
  return base + t * p;
}
double atan_d(double x) {
  if (isnan(x)) return x;
  double ax = abs(x);
  double r = ax <= 1.0LF ? atan01_d(ax) : 1.57079632679489661923LF - atan01_d(1.0LF / ax);
  return copy_sign(r, x);
}
// sqrt(a^2 + b^2) without overflow or underflow in the squares (complex128 abs).
double hypot_d(double a, double b) {
  a = abs(a);
  b = abs(b);
  if (isinf(a) || isinf(b)) return 1.0LF / 0.0LF;
  if (isnan(a) || isnan(b)) return 0.0LF / 0.0LF;
  double m = max(a, b), n = min(a, b);
  if (m == 0.0LF) return 0.0LF;
  double r = n / m;
  return m * sqrt(1.0LF + r * r);
}
double atan2_d(double y, double x) {
  const double PI_D = 3.14159265358979323846LF;
  if (isnan(x) || isnan(y)) return 0.0LF / 0.0LF;
  double ax = abs(x), ay = abs(y), r;
  if (isinf(ax) && isinf(ay)) {
    r = sign_bit(x) ? 3.0LF * PI_D / 4.0LF : PI_D / 4.0LF;
  } else if (ay == 0.0LF && ax == 0.0LF) {
    r = sign_bit(x) ? PI_D : 0.0LF;
  } else if (ay <= ax) {
    r = atan01_d(ay / ax);
    if (sign_bit(x)) r = PI_D - r;
  } else {
    r = PI_D / 2.0LF - atan01_d(ax / ay);
    if (sign_bit(x)) r = PI_D - r;
  }
  return copy_sign(r, y);
}
// 2/pi in 24-bit chunks: 2/pi = sum of TWO_OVER_PI[k] 2^(-24 (k + 1)).
const double TWO_OVER_PI[48] = double[48](
10680707.0LF, 7228996.0LF, 1387004.0LF, 2578385.0LF, 16069853.0LF, 12639074.0LF,
9804092.0LF, 4427841.0LF, 16666979.0LF, 11263675.0LF, 12935607.0LF, 2387514.0LF,
4345298.0LF, 14681673.0LF, 3074569.0LF, 13734428.0LF, 16653803.0LF, 1880361.0LF,
10960616.0LF, 8533493.0LF, 3062596.0LF, 8710556.0LF, 7349940.0LF, 6258241.0LF,
3772886.0LF, 3769171.0LF, 3798172.0LF, 8675211.0LF, 12450088.0LF, 3874808.0LF,
9961438.0LF, 366607.0LF, 15675153.0LF, 9132554.0LF, 7151469.0LF, 3571407.0LF,
2607881.0LF, 12013382.0LF, 4155038.0LF, 6285869.0LF, 7677882.0LF, 13102053.0LF,
15825725.0LF, 473591.0LF, 9065106.0LF, 15363067.0LF, 6271263.0LF, 9264392.0LF);
// Adds m * chunk_k 2^(E - 24 (k + 1)) mod 4 to hi, as two exact products: m is split in
// halves of 27 and 26 bits by integer operations, and the chunk has 24 bits (no rounding
// for a compiler to reassociate away). Each product is a multiple of its ulp, a power of
// two, so its remainder mod 4 is exact too.
// p mod 4 for p >= 0: from 2^54 on, p's ulp is a multiple of 4 (and drivers' double
// floor may go through int64, which p would overflow).
double mod4_d(double p) { return p >= 18014398509481984.0LF ? 0.0LF : p - 4.0LF * floor(p * 0.25LF); }
// 2^n for a normal exponent, from its bits (drivers' double ldexp may not reach far).
double pow2_d(int n) { return packDouble2x32(uvec2(0u, uint(n + 1023) << 20)); }
void huge_step(double mh, double ml, int E, int k, inout double hi) {
  double c = TWO_OVER_PI[k] * pow2_d(E - 24 * (k + 1));
  hi += mod4_d(mh * c) + mod4_d(ml * c);
}
// Payne-Hanek for |x| >= 2^19 pi/2: x (2/pi) mod 4 from the six chunks of 2/pi whose
// products with x are not all multiples of 4 (144 bits past them), with |x| = m 2^E, m in
// [1/2, 1) (no overflow, no subnormal chunk), unrolled (Mesa 22.3's loop limit). About
// 2e-15 absolute in r (the sum's roundings).
double reduce_huge_d(double x, out int q) {
  // From the bits (drivers' double frexp may not reach far): |x| = M 2^(E - 53), x normal.
  uvec2 w = unpackDouble2x32(x);
  int E = int((w.y >> 20) & 0x7FFu) - 1022;
  uint64_t M = (uint64_t((w.y & 0xFFFFFu) | 0x100000u) << 32) | uint64_t(w.x);
  double mh = double(M >> 26) * (1.0LF / 134217728.0LF);                        // 2^-27
  double ml = double(M & 0x3FFFFFFUL) * (1.0LF / 9007199254740992.0LF);          // 2^-53
  int k0 = max(0, (E - 55) / 24 - 1);
  double hi = 0.0LF;
  huge_step(mh, ml, E, k0 + 0, hi);
  huge_step(mh, ml, E, k0 + 1, hi);
  huge_step(mh, ml, E, k0 + 2, hi);
  huge_step(mh, ml, E, k0 + 3, hi);
  huge_step(mh, ml, E, k0 + 4, hi);
  huge_step(mh, ml, E, k0 + 5, hi);
  hi -= 4.0LF * floor(hi * 0.25LF);
  double n = floor(hi + 0.5LF);
  double f = hi - n;
  int qi = int(n) & 3;
  double r = f * 1.57079632679489661923LF;
  if (x < 0.0LF) {
    r = -r;
    qi = (4 - qi) & 3;
  }
  q = qi;
  return r;
}
// x = k pi/2 + r, |r| <= pi/4: pi/2 in fdlibm's three 33-bit parts and a tail, so each
// k * part is exact for |k| < 2^19; larger arguments take reduce_huge_d. q = k mod 4.
double reduce_pio2_d(double x, out int q) {
  if (abs(x) >= 823549.6654807494LF) return reduce_huge_d(x, q);
  double k = floor(x * 0.63661977236758134308LF + 0.5LF);
  precise double t = ((x - k * 1.57079632673412561417LF) - k * 6.07710050630396597660e-11LF) -
                     k * 2.02226624871116645580e-21LF;
  q = int(k - 4.0LF * floor(k * 0.25LF));
  return t - k * 8.47842766036889956997e-32LF;
}
double sin_d(double x) {
  if (isinf(x) || isnan(x)) return 0.0LF / 0.0LF;
  int q;
  double r = reduce_pio2_d(x, q);
  return q == 0 ? sin_poly_d(r) : q == 1 ? cos_poly_d(r) : q == 2 ? -sin_poly_d(r) : -cos_poly_d(r);
}
double cos_d(double x) {
  if (isinf(x) || isnan(x)) return 0.0LF / 0.0LF;
  int q;
  double r = reduce_pio2_d(x, q);
  return q == 0 ? cos_poly_d(r) : q == 1 ? -sin_poly_d(r) : q == 2 ? -cos_poly_d(r) : sin_poly_d(r);
}
double tan_d(double x) {
  if (isinf(x) || isnan(x)) return 0.0LF / 0.0LF;
  int q;
  double r = reduce_pio2_d(x, q);
  double s = sin_poly_d(r), c = cos_poly_d(r);
  return (q & 1) == 0 ? s / c : -c / s;
}
// 2^x = 2^k 2^f with f = x - floor(x) exact, so exp_d sees a small argument.
double exp2_d(double x) {
  if (isnan(x)) return x;
  if (x >= 1024.0LF) return 1.0LF / 0.0LF;
  if (x < -1075.0LF) return 0.0LF;
  double k = floor(x);
  return ldexp(exp_d((x - k) * 0.6931471805599453094LF), int(k));
}
#endif

#ifdef IS_FLOAT
// a - b * q with b * q exact (Dekker's product: the driver's fma may be a
// multiply and an add); `precise` keeps the compiler from reassociating.
#ifdef ST_F64
#define SPLITTER 134217729.0lf  // 2^27 + 1
#else
#define SPLITTER 4097.0  // 2^12 + 1
#endif
CT sub_exact_product(CT a, CT b, CT q) {
  precise CT p = b * q;
  precise CT bb = CT(SPLITTER) * b;
  precise CT qq = CT(SPLITTER) * q;
  if (isinf(bb) || isinf(qq)) return a - p;
  precise CT bh = bb - (bb - b);
  precise CT bl = b - bh;
  precise CT qh = qq - (qq - q);
  precise CT ql = q - qh;
  precise CT e = ((bh * qh - p) + bh * ql + bl * qh) + bl * ql;  // b * q = p + e exactly
  precise CT r = (a - p) - e;
  return r;
}
// x rounded to the storage type (float16 and bfloat16 compute in float32).
CT in_storage(CT x) {
#if defined(ST_F16)
  return float(float16_t(x));
#elif defined(ST_BF16)
  return bf16_to_f32(f32_to_bf16(x));
#else
  return x;
#endif
}
// frexp's exponent, also of subnormals (scaled into the normal range first: drivers'
// frexp of a subnormal is undefined, lavapipe's wrong).
int binade_of(CT x) {
  int e;
#ifdef ST_F64
  if (x < 2.2250738585072014e-308LF) {
    frexp(x * 3.402823669209385e+38LF, e);  // 2^128
    return e - 128;
  }
#else
  if (x < 1.17549435e-38) {
    frexp(x * 18446744073709551616.0, e);  // 2^64
    return e - 64;
  }
#endif
  frexp(x, e);
  return e;
}
// fmod of finite a and b, |a / b| past 2^24 (2^53 in f64), where trunc(a / b) is no
// longer an integer quotient: |a| is reduced by |b| scaled to its binade, largest first.
// Each subtraction is exact (t <= r < 2t) and lowers r's exponent, so this ends after at
// most the exponent difference plus one steps (about 280 in f32, 2100 in f64).
CT fmod_by_binades(CT a, CT b) {
  CT r = abs(a);
  const CT d = abs(b);
  // A divisor the device flushes to zero must not loop forever: NaN, and a bound on the
  // steps.
  if (d == CT(0)) return NAN_F;
  const int eb = binade_of(d);
  for (int step = 0; step < 2200 && r >= d; ++step) {
    const int er = binade_of(r);
    // 2^k in two steps: k reaches 277 (f32) from a subnormal d, past one ldexp's range.
    const int k = er - eb, h = k / 2;
    CT t = ldexp(ldexp(d, h), k - h);
    if (t > r) t = ldexp(ldexp(d, h), k - 1 - h);
    r -= t;
  }
  return copy_sign(r, a);
}
// fmod(a, b) from the exact a - b * trunc(a / b), q corrected by one where a / b
// rounded across an integer; past 2^24 (2^53 in f64) by binades.
CT fmod_f(CT a, CT b) {
  if (isinf(b) && !isinf(a)) return a;
  CT q = trunc(a / b);
#ifdef ST_F64
  const CT exact_integers = CT(9007199254740992.0lf);  // 2^53
#else
  const CT exact_integers = CT(16777216.0);  // 2^24
#endif
  if (abs(q) >= exact_integers && !isinf(a) && !isnan(b) && b != CT(0))
    return fmod_by_binades(a, b);
  CT r = sub_exact_product(a, b, q);
  if (r != CT(0) && sign_bit(r) != sign_bit(a)) r += (sign_bit(a) == sign_bit(b)) ? b : -b;
  if (abs(r) >= abs(b)) r -= (sign_bit(a) == sign_bit(b)) ? b : -b;
  return r == CT(0) ? copy_sign(CT(0), a) : r;
}
CT remainder_f(CT a, CT b) {
  CT m = fmod_f(a, b);
  if (m != CT(0) && sign_bit(b) != sign_bit(m)) m += b;
  return m;
}
CT lerp_f(CT a, CT b, CT w) {
  return (abs(w) < CT(0.5)) ? a + w * (b - a) : b - (b - a) * (CT(1) - w);
}
#endif

#if defined(HAS_TRANSC)
// a + b = s + err exactly (Knuth's two-sum).
void two_sum_f(float a, float b, out float s, out float err) {
  precise float sum = a + b;
  precise float bv = sum - a;
  precise float e = (a - (sum - bv)) + (b - bv);
  s = sum;
  err = e;
}
// log(a) = hi + lo for finite a > 0, to about 2^-40 relative: pow multiplies log's
// error by b log a, so one float's rounding of the log (the driver's pow) costs up to
// ~40 ulps. a = m 2^k with m in [sqrt(1/2), sqrt(2)]; log m = 2 atanh(s),
// s = (m - 1) / (m + 1) carried in two parts, the series' tail in float.
void log_split_f(float a, out float hi, out float lo) {
  int k = 0;
  if (a < 1.17549435e-38) {  // subnormal: scaled into the normal range
    a *= 16777216.0;
    k = -24;
  }
  uint bits = floatBitsToUint(a);
  k += int(bits >> 23) - 127;
  float m = uintBitsToFloat((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421356) {
    m *= 0.5;
    k += 1;
  }
  float f = m - 1.0;  // exact (Sterbenz)
  float g, g_err;
  two_sum_f(m, 1.0, g, g_err);  // m + 1 = g + g_err
  float s = f / g;
  // f - s (g + g_err) = (f - s g) - s g_err, the first exactly.
  precise float r = sub_exact_product(f, s, g) - s * g_err;
  float s_lo = r / g;
  float s2 = s * s;  // |s| <= 0.1716: the series to s^17 is below 2^-40 of 2s
  float t = 2.0 / 17.0;
  t = t * s2 + 2.0 / 15.0;
  t = t * s2 + 2.0 / 13.0;
  t = t * s2 + 2.0 / 11.0;
  t = t * s2 + 2.0 / 9.0;
  t = t * s2 + 2.0 / 7.0;
  t = t * s2 + 2.0 / 5.0;
  t = t * s2 + 2.0 / 3.0;
  float tail = s * s2 * t;
  const float LN2_HI = 0.693145751953125;  // 15 bits: k LN2_HI is exact
  const float LN2_LO = 1.42860682030941723212e-6;
  float e1;
  two_sum_f(float(k) * LN2_HI, 2.0 * s, hi, e1);
  lo = e1 + (float(k) * LN2_LO + (2.0 * s_lo + tail));
}
// a^b for finite a > 0 and finite b: exp of b log a with the product carried in two
// parts (b hi exact by Dekker's product), within about 1.5 ulps (the driver's pow, exp2
// of b log2 a in one float, was 20-40 ulps off on lavapipe).
float pow_positive_f(float a, float b) {
  float hi, lo;
  log_split_f(a, hi, lo);
  float p = b * hi;
  float e = -sub_exact_product(p, b, hi);  // b hi - p, exact
  float c = e + b * lo;
  float yh, yl;
  two_sum_f(p, c, yh, yl);
  if (yh > 88.8) return INF_F;
  if (yh < -104.0) return 0.0;
  return exp_f(yh) * (1.0 + yl);
}
// pow with C's special cases (GLSL's pow is undefined for x <= 0) and the exact
// forms PyTorch uses for the common exponents.
float safe_pow(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return NAN_F;
  if (b == 2.0) return a * a;
  if (b == 3.0) return a * a * a;
  if (b == 0.5) return sqrt(a);
  if (b == -1.0) return 1.0 / a;
  if (b == -2.0) return 1.0 / (a * a);
  bool odd = abs(b) < 16777216.0 && trunc(b) == b && mod(b, 2.0) != 0.0;
  if (isinf(b)) {
    float m = abs(a);
    if (m == 1.0) return 1.0;
    return ((m < 1.0) == (b > 0.0)) ? 0.0 : INF_F;
  }
  if (a == 0.0 || isinf(a)) {
    float r = ((a == 0.0) == (b < 0.0)) ? INF_F : 0.0;
    return (odd && sign_bit(a)) ? -r : r;
  }
  if (a < 0.0 && b != trunc(b)) return NAN_F;
  float r = pow_positive_f(abs(a), b);
  return (a < 0.0 && odd) ? -r : r;
}
float hypot_f(float a, float b) {
  a = abs(a);
  b = abs(b);
  if (isinf(a) || isinf(b)) return INF_F;
  if (isnan(a) || isnan(b)) return NAN_F;
  float m = max(a, b), n = min(a, b);
  if (m == 0.0) return 0.0;
  float r = n / m;
  return m * sqrt(1.0 + r * r);
}
#endif

#if defined(WITH_SPECIAL) && defined(ST_F64)
#include "f64_pow_erf.glsl"
#include "f64_gamma.glsl"
#include "f64_zeta.glsl"
#elif defined(WITH_SPECIAL)
#include "special_functions.glsl"
#endif

#ifdef ST_F64
// Half-to-even rounding from floor: lavapipe (Mesa 22.3, LLVM 15) lowers the
// double roundEven to a truncation on some CPUs.
double round_even_f64(double a) {
  double r = floor(a), d = a - r;
  if (d > 0.5lf || (d == 0.5lf && mod(r, 2.0lf) != 0.0lf)) r += 1.0lf;
  return r == 0.0lf ? copy_sign(r, a) : r;  // -0.4 and -0.0 give -0.0, as on the CPU
}
#endif

#ifdef IS_FLOAT
// One step of the storage dtype's bit pattern towards b (only moves of bits, no
// arithmetic, so that denormal results survive).
CT nextafter_f(CT a, CT b) {
  if (isnan(a) || isnan(b)) return NAN_F;
#if defined(ST_F64)
  bool same = a == b, a_zero = a == CT(0);
  bool away = (a < b) == (a > CT(0));  // away from zero
  bool neg = a_zero ? b < CT(0) : sign_bit(a);
#else
  // Compared as sign-magnitude integers: a driver may flush denormal operands of
  // a float compare (bfloat16's denormals are float32's).
  int ka = int(floatBitsToUint(a) & 0x7fffffffu), kb = int(floatBitsToUint(b) & 0x7fffffffu);
  ka = sign_bit(a) ? -ka : ka;
  kb = sign_bit(b) ? -kb : kb;
  bool same = ka == kb, a_zero = ka == 0;
  bool away = (ka < kb) == (ka > 0);
  bool neg = a_zero ? kb < 0 : sign_bit(a);
#endif
  if (same) return b;
#if defined(ST_F64)
  uvec2 w = unpackDouble2x32(a);
  uint64_t u = (uint64_t(w.y) << 32) | uint64_t(w.x);
  u = a_zero ? (neg ? 0x8000000000000001UL : 1UL) : (away ? u + 1UL : u - 1UL);
  return packDouble2x32(uvec2(uint(u & 0xffffffffUL), uint(u >> 32)));
#elif defined(ST_BF16) || defined(ST_F16)
#ifdef ST_BF16
  uint u = f32_to_bf16(a);  // exact: a is a bfloat16
#else
  uint u = packHalf2x16(vec2(a, 0.0)) & 0xffffu;  // exact: a is a float16
#endif
  u = a_zero ? (neg ? 0x8001u : 1u) : (away ? u + 1u : u - 1u);
#ifdef ST_BF16
  return uintBitsToFloat(u << 16);
#else
  return unpackHalf2x16(u).x;
#endif
#else
  uint u = floatBitsToUint(a);
  u = a_zero ? (neg ? 0x80000001u : 1u) : (away ? u + 1u : u - 1u);
  return uintBitsToFloat(u);
#endif
}
#endif

#ifdef HAS_TRANSC
// frexp from the bits alone (the driver may flush denormals in arithmetic):
// x = m 2^e with 0.5 <= |m| < 1; zero, inf and NaN give (x, 0).
float frexp_bits(float x, out int e) {
  e = 0;
  uint u = floatBitsToUint(x);
  uint bexp = (u >> 23) & 0xffu, mant = u & 0x7fffffu;
  if (bexp == 0xffu || (bexp == 0u && mant == 0u)) return x;
  if (bexp == 0u) {  // denormal: mant 2^-149, its top bit becomes the hidden one
    int top = findMSB(mant);
    e = top - 148;
    mant = (mant << uint(23 - top)) & 0x7fffffu;
  } else {
    e = int(bexp) - 126;
  }
  return uintBitsToFloat((u & 0x80000000u) | (126u << 23) | mant);
}
#endif

#ifndef IS_FLOAT
// Euclid's algorithm on magnitudes, as the CPU's calc_gcd, which takes them in the
// tensor's dtype: int8's abs(-128) stays -128 there, and the gcd comes out negative.
CT gcd_i(CT a, CT b) {
#if defined(ST_I8)
  a = int(int8_t(abs(a)));
  b = int(int8_t(abs(b)));
#elif defined(ST_I16)
  a = int(int16_t(abs(a)));
  b = int(int16_t(abs(b)));
#else
  a = abs(a);
  b = abs(b);
#endif
  while (a != CT(0)) {
    CT c = a;
    a = b - a * (b / a);
    b = c;
  }
  return b;
}
#endif

#ifndef IS_FLOAT
CT int_pow(CT a, CT b) {
  if (b < CT(0)) return (a == CT(1)) ? CT(1) : ((a == CT(-1)) ? ((b % CT(2) == CT(0)) ? CT(1) : CT(-1)) : CT(0));
  CT r = CT(1);
  CT base = a;
  CT e = b;
  while (e > CT(0)) {
    if ((e & CT(1)) != CT(0)) r *= base;
    base *= base;
    e >>= CT(1);
  }
  return r;
}
// GLSL's % on negative operands is undefined (glslang emits OpSMod): the
// truncated remainder is spelled out. Its callers never divide by zero, which
// SPIR-V leaves undefined (zero_divisor below).
CT int_fmod(CT a, CT b) { return a - b * (a / b); }
// An integer division by zero, which the CPU raises as ZeroDivisionError: noted in
// the device error record (OPERAND(3): binary ops have no third input, and the
// launcher puts the record there for these ops); the result is 0.
bool zero_divisor(CT b) {
  if (b != CT(0)) return false;
  report_device_error(OPERAND(3), DEVICE_ERROR_ZERO_DIVISION, 0l, 0l, 0u);
  return true;
}
#endif

CT apply(CT a, CT b, CT c, uint i) {
  switch (OP) {
    case OP_IDENTITY: return a;
    case OP_NEG: return -a;
    case OP_ABS: return abs(a);
    case OP_RELU: return (a > CT(0)) ? a : ((a != a) ? a : CT(0));
    case OP_CLAMP: {
      CT r = a;
#ifdef IS_FLOAT
      if (isnan(a)) return a;
#endif
      if ((pc.flags & EW_HAS_MIN) != 0u) r = max(r, scalar_value(1));
      if ((pc.flags & EW_HAS_MAX) != 0u) r = min(r, scalar_value(2));
      return r;
    }
    case OP_ARANGE: return scalar_value(0) + CT(i) * scalar_value(1);
    case OP_LOGICAL_NOT: return CT(a == CT(0));
    case OP_NONZERO: return CT(a != CT(0));
    case OP_THRESHOLD: return (a <= scalar_value(2)) ? scalar_value(0) : a;
    case OP_ADD: return a + scalar_value(2) * b;
    case OP_SUB: return a - scalar_value(2) * b;
    case OP_MUL: return a * b;
    case OP_EQ: return CT(a == b);
    case OP_NE: return CT(a != b);
    case OP_LT: return CT(a < b);
    case OP_LE: return CT(a <= b);
    case OP_GT: return CT(a > b);
    case OP_GE: return CT(a >= b);
    case OP_LOGICAL_AND: return CT(a != CT(0) && b != CT(0));
    case OP_LOGICAL_OR: return CT(a != CT(0) || b != CT(0));
    case OP_LOGICAL_XOR: return CT((a != CT(0)) != (b != CT(0)));
    case OP_THRESHOLD_BACKWARD: return (b <= scalar_value(2)) ? CT(0) : a;
    case OP_HARDTANH_BACKWARD:
      return (b <= scalar_value(2) || b >= scalar_value(0)) ? CT(0) : a;
    case OP_HEAVISIDE: return a == CT(0) ? b : CT(a > CT(0));
    case OP_WHERE: return (a != CT(0)) ? b : c;
    case OP_ADDCMUL: return a + scalar_value(2) * b * c;
    case OP_PRELU: return a > CT(0) ? a : b * a;
    case OP_PRELU_BACKWARD_INPUT: return b > CT(0) ? a : c * a;
    case OP_PRELU_BACKWARD_WEIGHT: return b > CT(0) ? CT(0) : b * a;
#ifdef IS_FLOAT
    case OP_SIGN: return isnan(a) ? CT(0) : sign(a);
    case OP_SQRT: return sqrt(a);
    case OP_RSQRT: return inversesqrt(a);
    case OP_RECIPROCAL: return CT(1) / a;
    case OP_FLOOR: return floor(a);
    case OP_CEIL: return ceil(a);
#ifdef ST_F64
    case OP_ROUND: return round_even_f64(a);
#else
    case OP_ROUND: return roundEven(a);
#endif
    case OP_TRUNC: return trunc(a);
    case OP_FRAC: return a - trunc(a);
    case OP_ROUND_DECIMALS: {
      CT p = scalar_value(2);
      return (pc.flags & EW_PARAM_FLAG) != 0u ? roundEven(a / p) * p : roundEven(a * p) / p;
    }
    case OP_ISNAN: return CT(isnan(a));
    case OP_ISINF: return CT(isinf(a));
    case OP_ISPOSINF: return CT(isinf(a) && a > CT(0));
    case OP_ISNEGINF: return CT(isinf(a) && a < CT(0));
    case OP_ISFINITE: return CT(!isnan(a) && !isinf(a));
    case OP_SIGNBIT: return CT(sign_bit(a));
    case OP_DIV: return a / b;
    // Rounded to the storage type after each step, as the CPU computes float16 and
    // bfloat16 (a quotient just under an integer may round up to it before trunc or floor).
    case OP_DIV_TRUNC: return trunc(in_storage(a / b));
    case OP_DIV_FLOOR: {
      // PyTorch's floor division: from the exact remainder, not floor(a / b).
      if (b == CT(0)) return a / b;
      CT m = in_storage(fmod_f(a, b));
      CT q = in_storage(in_storage(a - m) / b);
      if (m != CT(0) && (b < CT(0)) != (m < CT(0))) q = in_storage(q - CT(1));
      CT fq = floor(q);
      if (in_storage(q - fq) > CT(0.5)) fq += CT(1);
      return q == CT(0) ? copy_sign(CT(0), in_storage(a / b)) : fq;
    }
    case OP_MAXIMUM: return (isnan(a) || isnan(b)) ? NAN_F : max(a, b);
    case OP_MINIMUM: return (isnan(a) || isnan(b)) ? NAN_F : min(a, b);
    case OP_FMAX: return isnan(a) ? b : (isnan(b) ? a : max(a, b));
    case OP_FMIN: return isnan(a) ? b : (isnan(b) ? a : min(a, b));
    case OP_REMAINDER: return remainder_f(a, b);
    case OP_FMOD: return fmod_f(a, b);
    case OP_COPYSIGN: return copy_sign(a, b);
    case OP_NEXTAFTER: return nextafter_f(a, b);
    case OP_LERP_SCALAR: return lerp_f(a, b, scalar_value(2));
    case OP_LERP_TENSOR: return lerp_f(a, b, c);
    case OP_ADDCDIV: return a + scalar_value(2) * b / c;
    case OP_CLAMP_TENSOR: return isnan(a) ? a : min(max(a, b), c);
    case OP_HARDSWISH: return isnan(a) ? a : a * min(max(a + CT(3), CT(0)), CT(6)) / CT(6);
    case OP_HARDSIGMOID: return isnan(a) ? a : min(max(a + CT(3), CT(0)), CT(6)) / CT(6);
    case OP_HARDSWISH_BACKWARD:
      return b < CT(-3) ? CT(0) : (b <= CT(3) ? a * (b / CT(3) + CT(0.5)) : a);
    case OP_HARDSIGMOID_BACKWARD: return (b > CT(-3) && b < CT(3)) ? a / CT(6) : CT(0);
    case OP_NAN_TO_NUM:  // s1 = nan, s2 = posinf, s0 = neginf replacements
      if (isnan(a)) return scalar_value(1);
      return isinf(a) ? (a > CT(0) ? scalar_value(2) : scalar_value(0)) : a;
    case OP_LEAKY_RELU: return a > CT(0) ? a : a * scalar_value(2);
    case OP_LEAKY_RELU_BACKWARD: return b > CT(0) ? a : a * scalar_value(2);
    case OP_SOFTSHRINK: {
      CT l = scalar_value(2);
      return a > l ? a - l : (a < -l ? a + l : (isnan(a) ? a : copy_sign(CT(0), a)));
    }
    case OP_HARDSHRINK: {
      CT l = scalar_value(2);
      return (a >= -l && a <= l) ? CT(0) : a;
    }
    case OP_SHRINK_BACKWARD: {
      CT l = scalar_value(2);
      return (b >= -l && b <= l) ? CT(0) : a;
    }
#ifdef ST_F64
    case OP_ANGLE: return isnan(a) ? a : (a < CT(0) ? 3.14159265358979323846lf : CT(0));
#else
    case OP_ANGLE: return isnan(a) ? a : (a < CT(0) ? CT(PI) : CT(0));
#endif
    case OP_SIGMOID_BACKWARD: return a * b * (CT(1) - b);     // grad, output
    case OP_TANH_BACKWARD: return a * (CT(1) - b * b);        // grad, output
#endif
#if defined(ST_F64) && defined(WITH_SPECIAL)
    case OP_EXP: return exp_d(a);
    case OP_LOG: return log_d(a);
    case OP_LOG2: return log2_d(a);
    case OP_LOG10: return log_d(a) * 0.43429448190325182765LF;
    case OP_EXP2: return exp2_d(a);
    case OP_LOG1P: return log1p_d(a);
    case OP_EXPM1: return expm1_d(a);
    case OP_SIGMOID: return 1.0LF / (1.0LF + exp_d(-a));
    case OP_TANH: return tanh_d(a);
    case OP_SIN: return sin_d(a);
    case OP_COS: return cos_d(a);
    case OP_TAN: return tan_d(a);
    case OP_ASIN: return atan2_d(a, sqrt((1.0LF - a) * (1.0LF + a)));
    case OP_ACOS: return atan2_d(sqrt((1.0LF - a) * (1.0LF + a)), a);
    case OP_ATAN: return atan_d(a);
    case OP_ATAN2: return atan2_d(a, b);
    case OP_HYPOT: return hypot_d(a, b);
    case OP_POW: return pow_d(a, b);
    case OP_ERF: return erf_d(a);
    case OP_ERFC: return erfc_d(a);
    case OP_ERFINV: return erfinv_d(a);
    case OP_LGAMMA: return lgamma_d(a);
    case OP_ERFCX: return erfcx_d(a);
    case OP_LOG_NDTR: return log_ndtr_d(a);
    case OP_DIGAMMA: return digamma_d(a);
    case OP_TRIGAMMA: return trigamma_d(a);
    case OP_POLYGAMMA: return polygamma_d(dparam(0), a);
    case OP_ZETA: return zeta_d(a, b);
    // erfc's form keeps the digits of the far negative side, where 1 + erf cancels.
    case OP_GELU: return 0.5LF * a * erfc_d(-0.70710678118654752440LF * a);
    case OP_GELU_BACKWARD: {  // grad, input
      double cdf = 0.5LF * erfc_d(-0.70710678118654752440LF * b);
      double pdf = 0.39894228040143267794LF * exp_d(-0.5LF * b * b);
      return a * (cdf + b * pdf);
    }
    case OP_XLOGY: return isnan(b) ? b : (a == 0.0LF ? 0.0LF : a * log_d(b));
    case OP_XLOG1PY: return isnan(b) ? b : (a == 0.0LF ? 0.0LF : a * log1p_d(b));
    case OP_LOGADDEXP: {
      if (isinf(a) && a == b) return a;
      return max(a, b) + log1p_d(exp_d(-abs(a - b)));
    }
    case OP_LOGADDEXP2: {
      if (isinf(a) && a == b) return a;
      return max(a, b) + log1p_d(exp2_d(-abs(a - b))) * INV_LN2_D;
    }
    case OP_SINC: {
      // sin(pi a) = (-1)^n sin(pi (a - n)) with n the nearest integer, a - n exact.
      if (a == 0.0LF) return 1.0LF;
      if (isinf(a)) return 0.0LF / 0.0LF;
      double n = round_even_f64(a);
      double s = sin_d(3.14159265358979323846LF * (a - n));
      return (mod(n, 2.0LF) != 0.0LF ? -s : s) / (3.14159265358979323846LF * a);
    }
    case OP_ENTR:
      if (isnan(a)) return a;
      if (a == 0.0LF) return 0.0LF;
      return a > 0.0LF ? -a * log_d(a) : -1.0LF / 0.0LF;
    case OP_GLU: return a / (1.0LF + exp_d(-b));
    case OP_GLU_BACKWARD_A: return a / (1.0LF + exp_d(-b));  // grad, gate
    case OP_GLU_BACKWARD_B: {                                // grad, first half, gate
      double sg = 1.0LF / (1.0LF + exp_d(-c));
      return a * b * sg * (1.0LF - sg);
    }
    case OP_SINH: {
      double ax = abs(a), r;
      if (ax < 1.0LF) {
        double e = expm1_d(ax);
        r = 0.5LF * (e + e / (e + 1.0LF));
      } else {
        double t = exp_d(0.5LF * ax);
        r = (0.5LF * t) * t - 0.5LF / (t * t);
      }
      return copy_sign(r, a);
    }
    case OP_COSH: {
      double t = exp_d(0.5LF * abs(a));
      return (0.5LF * t) * t + 0.5LF / (t * t);
    }
    case OP_ASINH: {
      double ax = abs(a), r;
      if (ax > 1e150LF) {
        r = log_d(ax) + 0.6931471805599453094LF;
      } else {
        double x2 = ax * ax;
        r = log1p_d(ax + x2 / (1.0LF + sqrt(1.0LF + x2)));
      }
      return copy_sign(r, a);
    }
    case OP_ACOSH: {
      if (!(a >= 1.0LF)) return 0.0LF / 0.0LF;
      if (a > 1e150LF) return log_d(a) + 0.6931471805599453094LF;
      double t = a - 1.0LF;
      return log1p_d(t + sqrt(2.0LF * t + t * t));
    }
    // Both logs keep their digits where the one-log form divides by 1 - a near 1.
    case OP_ATANH: return 0.5LF * (log1p_d(a) - log1p_d(-a));
    // Activations (float parameters as doubles: dparam).
    case OP_ELU: return a <= 0.0LF ? expm1_d(a * dparam(2)) * dparam(0) : a * dparam(1);
    case OP_ELU_BACKWARD: {
      double negcoef = dparam(0), poscoef = dparam(1), negiptcoef = dparam(2);
      if ((pc.flags & EW_PARAM_FLAG) != 0u)  // b is the result
        return b <= 0.0LF ? a * negiptcoef * (b + negcoef) : a * poscoef;
      return b <= 0.0LF ? a * negiptcoef * negcoef * exp_d(b * negiptcoef) : a * poscoef;
    }
    case OP_SOFTPLUS: {
      double beta = dparam(0);
      return a * beta > dparam(1) ? a : log1p_d(exp_d(a * beta)) / beta;
    }
    case OP_SOFTPLUS_BACKWARD: {
      double beta = dparam(0);
      double z = exp_d(b * beta);
      return b * beta > dparam(1) ? a : a * z / (z + 1.0LF);
    }
    case OP_LOGIT: {
      double eps = dparam(0);
      double x = eps < 0.0LF ? a : clamp(a, eps, 1.0LF - eps);
      return x == 1.0LF ? 1.0LF / 0.0LF : log_d(x / (1.0LF - x));
    }
    case OP_LOGIT_BACKWARD: {  // grad, input
      double eps = dparam(0);
      if (eps < 0.0LF) return (b < 0.0LF || b > 1.0LF) ? 0.0LF / 0.0LF : a / (b * (1.0LF - b));
      return (b < eps || b > 1.0LF - eps) ? 0.0LF : a / (b * (1.0LF - b));
    }
    case OP_SILU: return a / (1.0LF + exp_d(-a));
    case OP_SILU_BACKWARD: {  // grad, input
      double sg = 1.0LF / (1.0LF + exp_d(-b));
      return a * sg * (1.0LF + b * (1.0LF - sg));
    }
    case OP_MISH: return a * tanh_d(a > 20.0LF ? a : log1p_d(exp_d(a)));
    case OP_MISH_BACKWARD: {  // grad, input
      double sg = 1.0LF / (1.0LF + exp_d(-b));
      double t = tanh_d(b > 20.0LF ? b : log1p_d(exp_d(b)));
      return a * (t + b * sg * (1.0LF - t * t));
    }
    case OP_LOG_SIGMOID: return isnan(a) ? a : min(a, 0.0LF) - log1p_d(exp_d(-abs(a)));
    case OP_LOG_SIGMOID_BACKWARD: {  // grad, input
      double z = exp_d(-abs(b));
      return b < 0.0LF ? a * (1.0LF - z / (1.0LF + z)) : a * (z / (1.0LF + z));
    }
    case OP_GELU_TANH: {
      double inner = 0.79788456080286535588LF * (a + 0.044715LF * a * a * a);
      return 0.5LF * a * (1.0LF + tanh_d(inner));
    }
    case OP_GELU_TANH_BACKWARD: {  // grad, input
      const double kBeta = 0.79788456080286535588LF, kKappa = 0.044715LF;
      double x2 = b * b;
      double t = tanh_d(kBeta * (b + kKappa * x2 * b));
      double left_d = 0.5LF * (1.0LF + t);
      double right_d = 0.5LF * b * (1.0LF - t * t) * kBeta * (1.0LF + 3.0LF * kKappa * x2);
      return a * (left_d + right_d);
    }
#endif
#ifdef HAS_TRANSC
    case OP_EXP: return exp_f(a);
    case OP_LOG: return log_f(a);
    case OP_LOG2: return log2_f(a);
    case OP_LOG10: return log_f(a) * 0.43429448190325182;
    case OP_EXP2: return exp2(a);
    case OP_LOG1P: return log1p_f(a);
    case OP_EXPM1: return expm1_f(a);
    case OP_SIGMOID: return sigmoid_f(a);
    case OP_TANH: return tanh_f(a);
    // Below pi/4 the series keeps the relative precision of small arguments.
    case OP_SIN: return sin_f(a);
    case OP_COS: return cos_f(a);
    case OP_TAN: return tan_f(a);
    case OP_ASIN: return atan2_f(a, sqrt((1.0 - a) * (1.0 + a)));
    case OP_ACOS: return atan2_f(sqrt((1.0 - a) * (1.0 + a)), a);
    case OP_ATAN: return atan_f(a);
    case OP_SINH: {  // within 2 ulps; one exp_f (3 ulps) where e^-x is below its error
      float ax = abs(a);
      float r;
      if (ax < 9.0) {
        float e = expm1_f(ax);
        r = 0.5 * (e + e / (e + 1.0));
      } else if (ax < 88.0) {
        r = 0.5 * exp_f(ax);
      } else {  // e^x would overflow before sinh does
        float t = exp_f(0.5 * ax);
        r = (0.5 * t) * t;
      }
      return copy_sign(r, a);
    }
    case OP_COSH: {
      float ax = abs(a);
      if (ax < 88.0) {
        float t = exp_f(ax);
        return 0.5 * t + 0.5 / t;
      }
      float t = exp_f(0.5 * ax);
      return (0.5 * t) * t;
    }
    case OP_ASINH: {
      float ax = abs(a);
      float r;
      if (ax > 1e18) {
        r = log(ax) + 0.69314718055994531;
      } else {
        float x2 = ax * ax;
        r = log1p_f(ax + x2 / (1.0 + sqrt(1.0 + x2)));
      }
      return copy_sign(r, a);
    }
    case OP_ACOSH: {
      if (a < 1.0) return NAN_F;
      if (a > 1e18) return log(a) + 0.69314718055994531;
      float t = a - 1.0;
      return log1p_f(t + sqrt(2.0 * t + t * t));
    }
    case OP_ATANH: {  // from |a|: log1p of a negative argument near -1 loses digits
      const float t = abs(a);
      return copy_sign(0.5 * log1p_f(2.0 * t / (1.0 - t)), a);
    }
    case OP_SINC: {
      // sin(pi a) = (-1)^n sin(pi r), r = a - n, from the relatively accurate
      // polynomial: the driver's sin loses all digits of tiny arguments.
      if (a == 0.0) return 1.0;
      float s, c, r;
      sincospi_reduced(a, s, c, r);
      float odd = mod(roundEven(a), 2.0);
      return copy_sign(s, r) * (odd != 0.0 ? -1.0 : 1.0) / (PI * a);
    }
    case OP_ENTR:
      if (isnan(a)) return a;
      if (a == 0.0) return 0.0;
      return a > 0.0 ? -a * log_f(a) : -INF_F;
    case OP_ERF: return erf_f(a);
    case OP_ERFC: return erfc_f(a);
    case OP_ERFINV: return erfinv_f(a);
    case OP_LGAMMA: return lgamma_f(a);
    case OP_DIGAMMA: return digamma_f(a);
    case OP_TRIGAMMA: return trigamma_f(a);
    case OP_LOGIT: {
      float eps = fparam(0);
      float x = eps < 0.0 ? a : clamp(a, eps, 1.0 - eps);
      return x == 1.0 ? INF_F : log_f(x / (1.0 - x));
    }
    case OP_SILU: return a / (1.0 + exp_f(-a));
    case OP_GELU: return a * normal_cdf(a);
    case OP_GELU_TANH: {
      float inner = 0.7978845608028654 * (a + 0.044715 * a * a * a);
      return 0.5 * a * (1.0 + tanh_f(inner));
    }
    case OP_ELU:
      return a <= 0.0 ? expm1_f(a * fparam(2)) * fparam(0) : a * fparam(1);
    case OP_MISH: return a * tanh_f(softplus_f(a));
    case OP_SOFTPLUS: {
      float beta = fparam(0);
      return a * beta > fparam(1) ? a : log1p_f(exp_f(a * beta)) / beta;
    }
    case OP_LOG_SIGMOID: return isnan(a) ? a : min(a, 0.0) - log1p_f(exp_f(-abs(a)));
    case OP_POW: return safe_pow(a, b);
#ifdef WITH_SPECIAL
    case OP_I0: return i0_f(a);
    case OP_I0E: return i0e_f(a);
    case OP_I1: return i1_any(a, false, true);
    case OP_I1E: return i1_any(a, true, true);
    case OP_NDTRI: return ndtri_f(a);
    case OP_LOG_NDTR: return log_ndtr_f(a);
    case OP_ERFCX: return erfcx_f(a);
    case OP_AIRY_AI: return airy_ai_f(a);
    case OP_BESSEL_J0: return bessel_j0_f(a);
    case OP_BESSEL_J1: return bessel_j1_f(a);
    case OP_BESSEL_Y0: return bessel_y0_f(a);
    case OP_BESSEL_Y1: return bessel_y1_f(a);
    case OP_MODIFIED_BESSEL_I0: return i0_f(a);
    case OP_MODIFIED_BESSEL_I1: return i1_any(a, false, false);
    case OP_MODIFIED_BESSEL_K0: return k0_any(a, false);
    case OP_MODIFIED_BESSEL_K1: return k1_any(a, false);
    case OP_SCALED_MODIFIED_BESSEL_K0: return k0_any(a, true);
    case OP_SCALED_MODIFIED_BESSEL_K1: return k1_any(a, true);
    case OP_SPHERICAL_BESSEL_J0: return spherical_j0_f(a);
    case OP_POLYGAMMA: return polygamma_f(fparam(0), a);
    case OP_FREXP_MANTISSA: {
      int e;
      return frexp_bits(a, e);
    }
    case OP_FREXP_EXPONENT: {
      int e;
      frexp_bits(a, e);
      return float(e);
    }
    case OP_ZETA: return zeta_f(a, b);
    case OP_IGAMMA: return igamma_f(a, b, false);
    case OP_IGAMMAC: return igamma_f(a, b, true);
    case OP_CHEBYSHEV_T: return chebyshev_f(a, b, 0, false);
    case OP_CHEBYSHEV_U: return chebyshev_f(a, b, 1, false);
    case OP_CHEBYSHEV_V: return chebyshev_f(a, b, 2, false);
    case OP_CHEBYSHEV_W: return chebyshev_f(a, b, 3, false);
    case OP_SHIFTED_CHEBYSHEV_T: return chebyshev_f(a, b, 0, true);
    case OP_SHIFTED_CHEBYSHEV_U: return chebyshev_f(a, b, 1, true);
    case OP_SHIFTED_CHEBYSHEV_V: return chebyshev_f(a, b, 2, true);
    case OP_SHIFTED_CHEBYSHEV_W: return chebyshev_f(a, b, 3, true);
    case OP_HERMITE_H: return hermite_h_f(a, b);
    case OP_HERMITE_HE: return hermite_he_f(a, b);
    case OP_LAGUERRE_L: return laguerre_l_f(a, b);
    case OP_LEGENDRE_P: return legendre_p_f(a, b);
#endif
    case OP_ATAN2: return atan2_f(a, b);
    case OP_HYPOT: return hypot_f(a, b);
    case OP_XLOGY: return isnan(b) ? NAN_F : (a == 0.0 ? 0.0 : a * log_f(b));
    case OP_XLOG1PY: return isnan(b) ? NAN_F : (a == 0.0 ? 0.0 : a * log1p_f(b));
    case OP_LOGADDEXP: {
      if (isinf(a) && a == b) return a;
      float m = max(a, b);
      return m + log1p_f(exp_f(-abs(a - b)));
    }
    case OP_LOGADDEXP2: {
      if (isinf(a) && a == b) return a;
      float m = max(a, b);
      return m + log1p_f(exp2(-abs(a - b))) * 1.4426950408889634;
    }
    case OP_GLU: return a * sigmoid_f(b);
    case OP_GLU_BACKWARD_A: return a * sigmoid_f(b);                  // grad, gate
    case OP_GLU_BACKWARD_B: {                                         // grad, half, gate
      float s = sigmoid_f(c);
      return a * b * s * (1.0 - s);
    }
    case OP_SILU_BACKWARD: {                                // grad, input
      float s = sigmoid_f(b);
      return a * s * (1.0 + b * (1.0 - s));
    }
    case OP_GELU_BACKWARD: {                                // grad, input (erf form)
      float cdf = normal_cdf(b);
      float pdf = 0.3989422804014327 * exp_f(-0.5 * b * b);
      return a * (cdf + b * pdf);
    }
    case OP_GELU_TANH_BACKWARD: {
      const float kBeta = 0.7978845608028654, kKappa = 0.044715;
      float x2 = b * b;
      float t = tanh_f(kBeta * (b + kKappa * x2 * b));
      float left_d = 0.5 * (1.0 + t);
      float right_d = 0.5 * b * (1.0 - t * t) * kBeta * (1.0 + 3.0 * kKappa * x2);
      return a * (left_d + right_d);
    }
    case OP_LOGIT_BACKWARD: {
      float eps = fparam(0);
      if (eps < 0.0) return (b < 0.0 || b > 1.0) ? NAN_F : a / (b * (1.0 - b));
      return (b < eps || b > 1.0 - eps) ? 0.0 : a / (b * (1.0 - b));
    }
    case OP_ELU_BACKWARD: {
      float negcoef = fparam(0), poscoef = fparam(1), negiptcoef = fparam(2);
      if ((pc.flags & EW_PARAM_FLAG) != 0u)  // b is the result
        return b <= 0.0 ? a * negiptcoef * (b + negcoef) : a * poscoef;
      return b <= 0.0 ? a * negiptcoef * negcoef * exp_f(b * negiptcoef) : a * poscoef;
    }
    case OP_SOFTPLUS_BACKWARD: {
      float beta = fparam(0);
      float z = exp_f(b * beta);
      return b * beta > fparam(1) ? a : a * z / (z + 1.0);
    }
    case OP_LOG_SIGMOID_BACKWARD: {
      float z = exp_f(-abs(b));
      return b < 0.0 ? a * (1.0 - z / (1.0 + z)) : a * (z / (1.0 + z));
    }
    case OP_MISH_BACKWARD: {
      float s = sigmoid_f(b);
      float t = tanh_f(softplus_f(b));
      return a * (t + b * s * (1.0 - t * t));
    }
#endif
#ifndef IS_FLOAT
    case OP_SIGN: return sign(a);
    case OP_RECIPROCAL: return CT(1) / a;
    case OP_BITWISE_NOT: return ~a;
    case OP_BITWISE_AND: return a & b;
    case OP_BITWISE_OR: return a | b;
    case OP_BITWISE_XOR: return a ^ b;
    case OP_SHIFT_LEFT: return (b < CT(0) || b >= CT(INT_BITS)) ? CT(0) : a << b;
    case OP_SHIFT_RIGHT:
      return (b < CT(0) || b >= CT(INT_BITS)) ? (a < CT(0) ? CT(-1) : CT(0)) : a >> b;
    case OP_MAXIMUM: case OP_FMAX: return max(a, b);
    case OP_MINIMUM: case OP_FMIN: return min(a, b);
    case OP_POW: return int_pow(a, b);
    case OP_GCD: return gcd_i(a, b);
    case OP_LCM: {
      CT g = gcd_i(a, b);
      return g == CT(0) ? CT(0) : abs(a / g * b);
    }
    case OP_DIV_TRUNC: return zero_divisor(b) ? CT(0) : a / b;
    case OP_DIV_FLOOR: {
      if (zero_divisor(b)) return CT(0);
      CT q = a / b;
      return (q * b != a && ((a < CT(0)) != (b < CT(0)))) ? q - CT(1) : q;
    }
    case OP_REMAINDER: {
      if (zero_divisor(b)) return CT(0);
      CT r = int_fmod(a, b);
      return (r != CT(0) && ((r < CT(0)) != (b < CT(0)))) ? r + b : r;
    }
    case OP_FMOD: return zero_divisor(b) ? CT(0) : int_fmod(a, b);
    case OP_CLAMP_TENSOR: return min(max(a, b), c);
    case OP_ISNAN: case OP_ISINF: case OP_ISPOSINF: case OP_ISNEGINF: return CT(0);
    case OP_ISFINITE: return CT(1);
    case OP_SIGNBIT: return CT(a < CT(0));
    case OP_FLOOR: case OP_CEIL: case OP_ROUND: case OP_TRUNC: return a;
    case OP_FRAC: return CT(0);
#endif
    default: return a;
  }
}

void store(uint off, CT r) {
#ifdef OUT_BOOL
  BufU8(OPERAND(0)).v[off] = uint8_t(r != CT(0));
#else
  if ((pc.flags & EW_BOOL_OUT) != 0u) r = CT(r != CT(0));
#if defined(ST_F16)
  BUF(OPERAND(0)).v[off] = float16_t(r);
#elif defined(ST_BF16)
  BUF(OPERAND(0)).v[off] = uint16_t(f32_to_bf16(r));
#elif defined(ST_U8)
  BUF(OPERAND(0)).v[off] = uint8_t(r);
#elif defined(ST_I16)
  BUF(OPERAND(0)).v[off] = int16_t(r);
#elif defined(ST_I8)
  BUF(OPERAND(0)).v[off] = int8_t(r);
#else
  BUF(OPERAND(0)).v[off] = r;
#endif
#endif
}

void element(uint i, uint o0, uint o1, uint o2, uint o3) {
  CT a = load(0, o1);
  CT b = (OP >= OP_ADD) ? load(1, o2) : CT(0);
  CT c = (OP >= OP_ADDCMUL) ? load(2, o3) : CT(0);
  store(o0, apply(a, b, c, i));
}

#if (defined(ST_F32) || defined(ST_F16) || defined(ST_BF16)) && !defined(OUT_BOOL) && \
    !defined(WITH_SPECIAL)
// Contiguous float operands aligned to four elements (EW_VEC4): each thread
// moves four elements with one 16-byte (8 for 16-bit types) load per operand.
#define HAS_VEC4 1
#if defined(ST_F32)
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BufV4 { vec4 v[]; };
vec4 to_vec4(vec4 x) { return x; }
vec4 from_vec4(vec4 x) { return x; }
#elif defined(ST_F16)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufV4 { f16vec4 v[]; };
vec4 to_vec4(f16vec4 x) { return vec4(x); }
f16vec4 from_vec4(vec4 x) { return f16vec4(x); }
#else
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufV4 { u16vec4 v[]; };
vec4 to_vec4(u16vec4 x) {
  return vec4(bf16_to_f32(uint(x.x)), bf16_to_f32(uint(x.y)), bf16_to_f32(uint(x.z)),
              bf16_to_f32(uint(x.w)));
}
u16vec4 from_vec4(vec4 x) {
  return u16vec4(f32_to_bf16(x.x), f32_to_bf16(x.y), f32_to_bf16(x.z), f32_to_bf16(x.w));
}
#endif

vec4 load4(int k, uint q) {
  if ((pc.flags & (EW_SCALAR0 << k)) != 0u) return vec4(scalar_value(k));
#ifdef TABLE
  if ((g_splat & (1u << k)) != 0u) return vec4(load(k, 0u));
#endif
  return to_vec4(BufV4(OPERAND(k + 1)).v[q]);
}

void quad(uint q) {
  uint i = q * 4u;
  vec4 a = load4(0, q);
  vec4 b = (OP >= OP_ADD) ? load4(1, q) : vec4(0);
  vec4 c = (OP >= OP_ADDCMUL) ? load4(2, q) : vec4(0);
  vec4 r;
  for (uint j = 0u; j < 4u; ++j) r[j] = apply(a[j], b[j], c[j], i + j);
  if ((pc.flags & EW_BOOL_OUT) != 0u) r = vec4(notEqual(r, vec4(0)));
  BufV4(OPERAND(0)).v[q] = from_vec4(r);
}
#endif

#ifdef TABLE
void main() {
  uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (g >= uint(pc.size[0])) return;
  Table t = Table(pc.ptr[0]);
  uint lo = 0u, hi = pc.numel - 1u;  // the last record starting at or before g
  while (lo < hi) {
    uint mid = (lo + hi + 1u) >> 1;
    if (t.r[mid].first_group <= g) lo = mid;
    else hi = mid - 1u;
  }
  TableRecord rec = t.r[lo];
  g_ptr = rec.ptr;
  g_s = rec.s;
  g_splat = rec.splat;
  uint i = ((g - rec.first_group) * WG + gl_LocalInvocationID.x) * 4u;
  if (i >= rec.numel) return;
#ifdef HAS_VEC4
  if (rec.aligned4 != 0u && i + 4u <= rec.numel) {
    quad(i / 4u);
    return;
  }
#endif
  for (uint j = i; j < min(i + 4u, rec.numel); ++j) {
    uint o1 = (rec.splat & 1u) != 0u ? 0u : j;
    uint o2 = (rec.splat & 2u) != 0u ? 0u : j;
    uint o3 = (rec.splat & 4u) != 0u ? 0u : j;
    element(j, j, o1, o2, o3);
  }
}
#else
void main() {
  // One call of element() and one of quad(): each inlines the whole op switch, which is
  // most of what a driver compiles before the op's specialization drops the rest.
  uint i = linear_id(), count = 1u;
#ifdef HAS_VEC4
  if ((pc.flags & EW_VEC4) != 0u) {
    // numel is in quads here; a ragged tail of 1-3 elements goes element-wise.
    uint quads = pc.numel / 4u;
    if (i < quads) {
      quad(i);
      return;
    }
    if (i > quads) return;
    i = quads * 4u;
    count = pc.numel - i;
  } else
#endif
  if (i >= pc.numel) return;
  bool dense = (pc.flags & (EW_CONTIGUOUS | EW_VEC4)) != 0u;
  for (uint e = i; e < i + count; ++e) {
    uint r = e;
    int o0 = 0, o1 = 0, o2 = 0, o3 = 0;
    for (int d = 0; !dense && d < pc.ndim; ++d) {
      int idx = int(r % uint(pc.size[d]));
      r /= uint(pc.size[d]);
      o0 += idx * pc.stride[0][d];
      o1 += idx * pc.stride[1][d];
      o2 += idx * pc.stride[2][d];
      o3 += idx * pc.stride[3][d];
    }
    if (dense) o0 = o1 = o2 = o3 = int(e);
    element(e, uint(o0), uint(o1), uint(o2), uint(o3));
  }
}
#endif
