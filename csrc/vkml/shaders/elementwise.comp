#version 450
// Elementwise ops (unary, binary, ternary) over up to three collapsed dims with
// per-operand strides; the op is specialization constant 0 (see op_codes.h).
//! variant f32 -DST_F32
//! variant f16 -DST_F16 -DNEED_F16
//! variant i32 -DST_I32
//! variant i64 -DST_I64
//! variant u8 -DST_U8
//! variant f32_cmp -DST_F32 -DOUT_BOOL
//! variant f16_cmp -DST_F16 -DNEED_F16 -DOUT_BOOL
//! variant i32_cmp -DST_I32 -DOUT_BOOL
//! variant i64_cmp -DST_I64 -DOUT_BOOL
//! variant u8_cmp -DST_U8 -DOUT_BOOL
#include "common.glsl"
#include "op_codes.h"

const uint WG = 256;
layout(local_size_x = WG) in;
layout(constant_id = 0) const int OP = 0;

#if defined(ST_F32)
#define BUF BufF32
#define CT float
#define IS_FLOAT 1
#elif defined(ST_F16)
#define BUF BufF16
#define CT float
#define IS_FLOAT 1
#elif defined(ST_I32)
#define BUF BufI32
#define CT int
#elif defined(ST_I64)
#define BUF BufI64
#define CT int64_t
#else
#define BUF BufU8
#define CT int
#define IS_BYTE 1
#endif

layout(push_constant, scalar) uniform PC {
  uint64_t ptr[4];    // out, in0, in1, in2
  int size[3];        // innermost first
  int ndim;
  int stride[4][3];   // element strides per operand
  uint numel;
  uint flags;
  uint64_t s[3];      // scalars: in0/in1/in2 by value, or op parameters
} pc;

CT scalar_value(int k) {
#ifdef IS_FLOAT
  return uintBitsToFloat(uint(pc.s[k] & 0xffffffffUL));
#elif defined(ST_I64)
  return int64_t(pc.s[k]);
#else
  return int(uint(pc.s[k] & 0xffffffffUL));
#endif
}

CT load(int k, uint off) {
  if ((pc.flags & (EW_SCALAR0 << k)) != 0u) return scalar_value(k);
  if (k == 0 && (pc.flags & EW_IN0_BOOL) != 0u) return CT(BufU8(pc.ptr[1]).v[off]);
  return CT(BUF(pc.ptr[k + 1]).v[off]);
}

#ifdef IS_FLOAT
#define NAN_F uintBitsToFloat(0x7fc00000u)
float safe_pow(float a, float b) {
  if (b == 0.0) return 1.0;
  if (a >= 0.0 || isnan(a)) return pow(a, b);
  if (b != trunc(b)) return NAN_F;
  float r = pow(-a, b);
  return (mod(b, 2.0) != 0.0) ? -r : r;
}
float gelu_erf(float x) {
  // erf from Abramowitz-Stegun 7.1.26 is too coarse; use the rational
  // approximation with 1.2e-7 max error (Numerical Recipes erfc).
  float z = abs(x) * 0.70710678118654752;
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  float erf_v = 1.0 - r;
  return x >= 0.0 ? erf_v : -erf_v;
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
#endif

CT apply(CT a, CT b, CT c, uint i) {
  switch (OP) {
    case OP_IDENTITY: return a;
    case OP_NEG: return -a;
    case OP_ABS: return abs(a);
    case OP_SIGN: return sign(a);
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
    case OP_WHERE: return (a != CT(0)) ? b : c;
    case OP_ADDCMUL: return a + scalar_value(2) * b * c;
#ifdef IS_FLOAT
    case OP_SQRT: return sqrt(a);
    case OP_RSQRT: return inversesqrt(a);
    case OP_EXP: return exp(a);
    case OP_LOG: return log(a);
    case OP_LOG2: return log2(a);
    case OP_EXP2: return exp2(a);
    case OP_LOG1P: return (abs(a) < 1e-4) ? a * (1.0 - 0.5 * a) : log(1.0 + a);
    case OP_EXPM1: return (abs(a) < 1e-5) ? a + 0.5 * a * a : exp(a) - 1.0;
    case OP_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case OP_TANH: return isnan(a) ? a : tanh(clamp(a, -15.0, 15.0));  // clamp: no inf/inf
    case OP_RECIPROCAL: return 1.0 / a;
    case OP_SIN: return sin(a);
    case OP_COS: return cos(a);
    case OP_FLOOR: return floor(a);
    case OP_CEIL: return ceil(a);
    case OP_ROUND: return roundEven(a);
    case OP_TRUNC: return trunc(a);
    case OP_ISNAN: return float(isnan(a));
    case OP_ISINF: return float(isinf(a));
    case OP_ISFINITE: return float(!isnan(a) && !isinf(a));
    case OP_SILU: return a / (1.0 + exp(-a));
    case OP_GELU: return 0.5 * a * (1.0 + gelu_erf(a));
    case OP_GELU_TANH: {
      float inner = 0.7978845608028654 * (a + 0.044715 * a * a * a);
      return 0.5 * a * (1.0 + tanh(clamp(inner, -15.0, 15.0)));
    }
    case OP_DIV: return a / b;
    case OP_DIV_TRUNC: return trunc(a / b);
    case OP_DIV_FLOOR: return floor(a / b);
    case OP_MAXIMUM: return (isnan(a) || isnan(b)) ? NAN_F : max(a, b);
    case OP_MINIMUM: return (isnan(a) || isnan(b)) ? NAN_F : min(a, b);
    case OP_POW: return safe_pow(a, b);
    case OP_REMAINDER: { float m = a - b * floor(a / b); return m; }
    case OP_FMOD: return a - b * trunc(a / b);
    case OP_ATAN2: return atan(a, b);
    case OP_SIGMOID_BACKWARD: return a * b * (1.0 - b);     // grad, output
    case OP_TANH_BACKWARD: return a * (1.0 - b * b);        // grad, output
    case OP_SILU_BACKWARD: {                                // grad, input
      float s = 1.0 / (1.0 + exp(-b));
      return a * s * (1.0 + b * (1.0 - s));
    }
    case OP_GELU_BACKWARD: {                                // grad, input (erf form)
      float cdf = 0.5 * (1.0 + gelu_erf(b));
      float pdf = 0.3989422804014327 * exp(-0.5 * b * b);
      return a * (cdf + b * pdf);
    }
    case OP_LERP_SCALAR: { float w = scalar_value(2); return (abs(w) < 0.5) ? a + w * (b - a) : b - (b - a) * (1.0 - w); }
    case OP_LERP_TENSOR: return (abs(c) < 0.5) ? a + c * (b - a) : b - (b - a) * (1.0 - c);
    case OP_ADDCDIV: return a + scalar_value(2) * b / c;
    case OP_CLAMP_TENSOR: return isnan(a) ? a : min(max(a, b), c);
#else
    case OP_BITWISE_NOT: return ~a;
    case OP_BITWISE_AND: return a & b;
    case OP_BITWISE_OR: return a | b;
    case OP_BITWISE_XOR: return a ^ b;
    case OP_MAXIMUM: return max(a, b);
    case OP_MINIMUM: return min(a, b);
    case OP_POW: return int_pow(a, b);
    case OP_DIV_TRUNC: return a / b;
    case OP_DIV_FLOOR: {
      CT q = a / b;
      return (q * b != a && ((a < CT(0)) != (b < CT(0)))) ? q - CT(1) : q;
    }
    case OP_REMAINDER: {
      CT r = a % b;
      return (r != CT(0) && ((r < CT(0)) != (b < CT(0)))) ? r + b : r;
    }
    case OP_FMOD: return a % b;
    case OP_CLAMP_TENSOR: return min(max(a, b), c);
    case OP_ISNAN: return CT(0);
    case OP_ISINF: return CT(0);
    case OP_ISFINITE: return CT(1);
    case OP_FLOOR: case OP_CEIL: case OP_ROUND: case OP_TRUNC: return a;
#endif
    default: return a;
  }
}

void main() {
  uint i = linear_id();
  if (i >= pc.numel) return;
  uint off[4];
  if ((pc.flags & EW_CONTIGUOUS) != 0u) {
    off[0] = i; off[1] = i; off[2] = i; off[3] = i;
  } else {
    uint r = i;
    int o0 = 0, o1 = 0, o2 = 0, o3 = 0;
    for (int d = 0; d < pc.ndim; ++d) {
      int idx = int(r % uint(pc.size[d]));
      r /= uint(pc.size[d]);
      o0 += idx * pc.stride[0][d];
      o1 += idx * pc.stride[1][d];
      o2 += idx * pc.stride[2][d];
      o3 += idx * pc.stride[3][d];
    }
    off[0] = uint(o0); off[1] = uint(o1); off[2] = uint(o2); off[3] = uint(o3);
  }
  CT a = load(0, off[1]);
  CT b = (OP >= OP_ADD) ? load(1, off[2]) : CT(0);
  CT c = (OP >= OP_ADDCMUL) ? load(2, off[3]) : CT(0);
  CT r = apply(a, b, c, i);
#ifdef OUT_BOOL
  BufU8(pc.ptr[0]).v[off[0]] = uint8_t(r != CT(0));
#else
  if ((pc.flags & EW_BOOL_OUT) != 0u) r = CT(r != CT(0));
#if defined(ST_F16)
  BUF(pc.ptr[0]).v[off[0]] = float16_t(r);
#elif defined(ST_U8)
  BUF(pc.ptr[0]).v[off[0]] = uint8_t(r);
#else
  BUF(pc.ptr[0]).v[off[0]] = r;
#endif
#endif
}
