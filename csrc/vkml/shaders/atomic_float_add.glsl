// Floating-point adds into memory other threads add into as well, by compare-and-swap on
// the value's bits: Vulkan 1.x has no float atomic add without VK_EXT_shader_atomic_float,
// which many drivers lack. The float64 add needs GL_EXT_shader_atomic_int64
// (shaderBufferInt64Atomics), enabled by the including shader.

void atomic_add_f32(uint64_t base, uint off, float v) {
  BufU32 b = BufU32(base);
  uint old = b.v[off];
  while (true) {
    uint prev = atomicCompSwap(b.v[off], old, floatBitsToUint(uintBitsToFloat(old) + v));
    if (prev == old) break;
    old = prev;
  }
}

#ifdef ATOMIC_ADD_F64
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufAtomicU64 { uint64_t v[]; };
double f64_of_bits(uint64_t u) { return packDouble2x32(uvec2(uint(u & 0xffffffffUL), uint(u >> 32))); }
uint64_t bits_of_f64(double d) {
  uvec2 w = unpackDouble2x32(d);
  return uint64_t(w.x) | (uint64_t(w.y) << 32);
}
void atomic_add_f64(uint64_t base, uint off, double v) {
  BufAtomicU64 b = BufAtomicU64(base);
  uint64_t old = b.v[off];
  while (true) {
    uint64_t prev = atomicCompSwap(b.v[off], old, bits_of_f64(f64_of_bits(old) + v));
    if (prev == old) break;
    old = prev;
  }
}
#endif
