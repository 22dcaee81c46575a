// 1 / s rounded once to the nearest float (ties to even), in integer steps: Vulkan lets
// float division be 2.5 ulp off, and a scale's reciprocal off by one ulp moves rounded
// quantization steps (PyTorch multiplies by 1.0f / scale, correctly rounded).
float exact_reciprocal(float s) {
  uint u = floatBitsToUint(s), sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  if (mag == 0u) return uintBitsToFloat(sign | 0x7f800000u);
  if (mag >= 0x7f800000u) return mag == 0x7f800000u ? uintBitsToFloat(sign) : s;
  int e = int(mag >> 23);
  uint m = mag & 0x7fffffu;
  if (e == 0) {  // subnormal: normalized, with the exponent below 1
    int shift = 23 - findMSB(m);
    m = (m << shift) & 0x7fffffu;
    e = 1 - shift;
  }
  // s = mant * 2^(e - 150), so 1 / s = (q + r / mant) * 2^(102 - e): q has 25 bits
  // (26 when s is a power of two).
  uint64_t mant = uint64_t(m | 0x800000u), num = uint64_t(1) << 48;
  uint64_t q = num / mant, r = num % mant;
  int biased = 253 - e;  // the result's exponent field for a 25-bit q
  int drop = biased >= 1 ? 1 : 2 - biased;  // bits below the mantissa (more when subnormal)
  if (drop > 26) return uintBitsToFloat(sign);
  uint64_t halfway = uint64_t(1) << (drop - 1), rem = q & ((uint64_t(1) << drop) - 1ul);
  uint64_t out_m = q >> drop;
  if (rem > halfway || (rem == halfway && (r != 0ul || (out_m & 1ul) != 0ul))) out_m += 1ul;
  if (biased <= 0) return uintBitsToFloat(sign | uint(out_m));  // a carry makes it normal
  if (out_m >= (uint64_t(1) << 24)) {
    out_m >>= 1;
    biased += 1;
  }
  if (biased >= 255) return uintBitsToFloat(sign | 0x7f800000u);
  return uintBitsToFloat(sign | (uint(biased) << 23) | (uint(out_m) & 0x7fffffu));
}
