// float64 conversions in integer arithmetic on the value's bits, for devices without
// shaderFloat64 (many Intel and mobile GPUs), where float64 tensors are stored and
// converted but not computed on. Each rounds as the CPU's conversion does: to nearest,
// ties to even, into float32; toward zero into integers. Needs 64-bit integers (as every
// kernel here does, for addresses).

// The sign bit and the magnitude rounded to nearest-even after dropping `shift` low bits
// of `full` (shift >= 1).
uint64_t round_shift_right(uint64_t full, int shift) {
  if (shift >= 64) return 0UL;
  uint64_t kept = full >> shift;
  uint64_t rest = full & ((1UL << shift) - 1UL);
  uint64_t halfway = 1UL << (shift - 1);
  if (rest > halfway || (rest == halfway && (kept & 1UL) != 0UL)) kept += 1UL;
  return kept;
}

float f32_from_f64_bits(uint64_t b) {
  uint sign = uint(b >> 63) << 31;
  int e = int((b >> 52) & 0x7ffUL);
  uint64_t m = b & 0xfffffffffffffUL;
  if (e == 0x7ff) return uintBitsToFloat(sign | (m != 0UL ? 0x7fc00000u | uint(m >> 29) : 0x7f800000u));
  if (e == 0) return uintBitsToFloat(sign);  // float64 subnormals are far below float32's
  int fe = e - 1023 + 127;                      // float32's biased exponent
  if (fe >= 255) return uintBitsToFloat(sign | 0x7f800000u);
  uint64_t full = m | (1UL << 52);
  // 24 significant bits for a normal result; fewer, by 1 - fe, for a subnormal one.
  int shift = fe >= 1 ? 29 : 29 + 1 - fe;
  uint kept = uint(round_shift_right(full, shift));
  // kept holds the implicit bit (bit 23) of a normal result, so the exponent field adds
  // fe - 1; a carry out of the mantissa moves the exponent up (to infinity past the top).
  uint bits = fe >= 1 ? (uint(fe - 1) << 23) + kept : kept;
  return uintBitsToFloat(sign | min(bits, 0x7f800000u));
}

uint64_t f64_bits_from_f32(float f) {
  uint u = floatBitsToUint(f);
  uint64_t sign = uint64_t(u >> 31) << 63;
  int e = int((u >> 23) & 0xffu);
  uint m = u & 0x7fffffu;
  if (e == 255) return sign | (0x7ffUL << 52) | (uint64_t(m) << 29);
  if (e == 0) {
    if (m == 0u) return sign;
    int shift = 23 - findMSB(m);  // float32 subnormal: normalize
    m = (m << shift) & 0x7fffffu;
    e = 1 - shift;
  }
  return sign | (uint64_t(e - 127 + 1023) << 52) | (uint64_t(m) << 29);
}

uint64_t f64_bits_from_int(int64_t v) {
  if (v == 0L) return 0UL;
  uint64_t sign = v < 0L ? 1UL << 63 : 0UL;
  uint64_t a = v < 0L ? uint64_t(-v) : uint64_t(v);  // -INT64_MIN wraps to 2^63, as wanted
  uint hi = uint(a >> 32);
  int msb = hi != 0u ? 32 + findMSB(hi) : findMSB(uint(a));
  uint64_t kept = msb <= 52 ? a << (52 - msb) : round_shift_right(a, msb - 52);
  // As above: kept's bit 52 is the implicit one; a rounding carry raises the exponent.
  return sign | ((uint64_t(msb + 1023 - 1) << 52) + kept);
}

// Truncated toward zero; beyond int64 (and infinities, NaN) INT64_MIN, as x86's
// conversion gives.
int64_t int_from_f64_bits(uint64_t b) {
  int e = int((b >> 52) & 0x7ffUL) - 1023;
  if (e < 0) return 0L;
  if (e >= 63) return int64_t(1UL << 63);
  uint64_t full = (b & 0xfffffffffffffUL) | (1UL << 52);
  uint64_t mag = e >= 52 ? full << (e - 52) : full >> (52 - e);
  return (b >> 63) != 0UL ? -int64_t(mag) : int64_t(mag);
}

bool f64_bits_nonzero(uint64_t b) { return (b & 0x7fffffffffffffffUL) != 0UL; }
