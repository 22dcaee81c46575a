#version 450
// Counter-based random numbers: element i draws Philox4x32-10 of counter
// (i, offset_lo, offset_hi, 0) under key (seed_lo, seed_hi), so the numbers
// depend on neither the GPU nor the launch shape.
//
// Specialization constant 0 = distribution (ops/random.h order: uniform,
// normal, randint, bernoulli). The variant is the output dtype.
//! dtypes f32 f16 bf16 f64 i32 i64 u8
#ifdef ST_BF16
#define NEED_I16  // bf16 bits move through int16 arithmetic
#endif
#include "common.glsl"

layout(constant_id = 0) const int DIST = 0;

#include "random_push.h"

const uint WG = RANDOM_WG;
layout(local_size_x = WG) in;

#include "philox.glsl"

#ifdef ST_F64
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#include "f64_math.glsl"

// [0, 1) from 53 bits of two words: every value is exact in fp64.
double unit53(uint hi, uint lo) {
  return (double(hi >> 5) * 67108864.0LF + double(lo >> 6)) * (1.0LF / 9007199254740992.0LF);
}

// cos(2 pi u) for u in [0, 1): u - q / 4 is exact, so the reduced angle r (|r| <= pi / 4)
// carries one rounding; then f64_math.glsl's series.
double cos_2pi_d(double u) {
  double q = floor(4.0LF * u + 0.5LF);
  double r = (u - 0.25LF * q) * 6.283185307179586477LF;
  int quadrant = int(q) & 3;
  return quadrant == 0   ? cos_poly_d(r)
         : quadrant == 1 ? -sin_poly_d(r)
         : quadrant == 2 ? -cos_poly_d(r)
                         : sin_poly_d(r);
}
#endif

// [0, 1) from the top 24 bits: every value is exact in fp32.
float unit(uint x) { return float(x >> 8) * (1.0 / 16777216.0); }

void store_float(uint i, float v) {
#if defined(ST_F64)
  BufF64(pc.dst).v[i] = double(v);
#elif defined(ST_F32)
  BufF32(pc.dst).v[i] = v;
#elif defined(ST_F16)
  BufF16(pc.dst).v[i] = float16_t(v);
#elif defined(ST_BF16)
  BufU16(pc.dst).v[i] = uint16_t(f32_to_bf16(v));
#elif defined(ST_I32)
  BufI32(pc.dst).v[i] = int(v);
#elif defined(ST_I64)
  BufI64(pc.dst).v[i] = int64_t(v);
#else
  BufU8(pc.dst).v[i] = uint8_t(uint(v));
#endif
}

void store_int(uint i, int64_t v) {
#if defined(ST_F64)
  BufF64(pc.dst).v[i] = double(v);
#elif defined(ST_F32)
  BufF32(pc.dst).v[i] = float(v);
#elif defined(ST_F16)
  BufF16(pc.dst).v[i] = float16_t(float(v));
#elif defined(ST_BF16)
  BufU16(pc.dst).v[i] = uint16_t(f32_to_bf16(float(v)));
#elif defined(ST_I32)
  BufI32(pc.dst).v[i] = int(v);
#elif defined(ST_I64)
  BufI64(pc.dst).v[i] = v;
#else
  BufU8(pc.dst).v[i] = uint8_t(v);
#endif
}

void main() {
  uint i = linear_id();
  if (i >= pc.numel) return;
  uvec4 x = philox4x32(uvec4(i, pc.offset_lo, pc.offset_hi, 0u), uvec2(pc.seed_lo, pc.seed_hi), 10);
#ifdef ST_F64
  // float64 as the CPU draws it: 53 random bits, then from + (to - from) * u; Box-Muller
  // in float64 for the normal.
  const double a = uint64BitsToDouble(pc.a64), b = uint64BitsToDouble(pc.b64);
  if (DIST == RANDOM_UNIFORM) {
    BufF64(pc.dst).v[i] = a + (b - a) * unit53(x.x, x.y);
    return;
  }
  if (DIST == RANDOM_NORMAL) {
    double u1 = 1.0LF - unit53(x.x, x.y);  // (0, 1]: log(u1) is finite
    double z = sqrt(-2.0LF * log_d(u1)) * cos_2pi_d(unit53(x.z, x.w));
    BufF64(pc.dst).v[i] = a + b * z;
    return;
  }
#endif
  switch (DIST) {
    case RANDOM_UNIFORM: {
      float v = round_to_storage(pc.a + (pc.b - pc.a) * unit(x.x));
      // Rounding may land on the excluded upper bound: fold it back to `from`.
      store_float(i, v >= pc.b ? pc.a : v);
      break;
    }
    case RANDOM_NORMAL: {
      // u1 in (0, 1), 23 bits and a half (every value exact): log(u1) is finite and never
      // 0, so no draw is exactly zero (with u1 = 1 one in 2^24 was, and code that
      // normalizes a draw by its norm, as torch.distributions' LKJ sampler, got NaN).
      float u1 = (float(x.x >> 9) + 0.5) * (1.0 / 8388608.0);
      float u2 = unit(x.y);
      float z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
      store_float(i, pc.a + pc.b * z);
      break;
    }
    case RANDOM_RANDINT: {
      // Modulo bias is range / 2^32 with one word, range / 2^64 with two:
      // small ranges take the cheap 32-bit path.
      uint64_t r;
      if (pc.range <= 256UL) {
        r = uint64_t(x.x % uint(pc.range));
      } else {
        r = ((uint64_t(x.y) << 32) | uint64_t(x.x)) % pc.range;
      }
      store_int(i, pc.lo + int64_t(r));
      break;
    }
    default:
      store_int(i, unit(x.x) < pc.a ? 1 : 0);
  }
}
