#version 450
// Counter-based random numbers: element i draws Philox4x32-10 of counter
// (i, offset_lo, offset_hi, 0) under key (seed_lo, seed_hi), so the numbers
// depend on neither the GPU nor the launch shape.
//
// Specialization constant 0 = distribution (ops/random.h order: uniform,
// normal, randint, bernoulli). The variant is the output dtype.
//! dtypes f32 f16 bf16 i32 i64 u8
#ifdef ST_BF16
#define NEED_I16  // bf16 bits move through int16 arithmetic
#endif
#include "common.glsl"

layout(constant_id = 0) const int DIST = 0;

#include "random_push.h"

const uint WG = RANDOM_WG;
layout(local_size_x = WG) in;

#include "philox.glsl"

// [0, 1) from the top 24 bits: every value is exact in fp32.
float unit(uint x) { return float(x >> 8) * (1.0 / 16777216.0); }

void store_float(uint i, float v) {
#if defined(ST_F32)
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
#if defined(ST_F32)
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
  switch (DIST) {
    case RANDOM_UNIFORM: {
      float v = round_to_storage(pc.a + (pc.b - pc.a) * unit(x.x));
      // Rounding may land on the excluded upper bound: fold it back to `from`.
      store_float(i, v >= pc.b ? pc.a : v);
      break;
    }
    case RANDOM_NORMAL: {
      float u1 = float((x.x >> 8) + 1u) * (1.0 / 16777216.0);  // (0, 1]: log(u1) is finite
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
