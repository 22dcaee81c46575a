#version 450
// Strided copy with dtype conversion: dst[idx] = convert(src[idx]) over up to
// six collapsed dims. The dtypes are push constants (uniform branches), so one
// pipeline serves every pair. The f64 variant needs shaderFloat64; f64_bits converts
// float64 through its bits in integer arithmetic, for devices without it.
//! variant base -DNEED_F16 -DNEED_I16
//! variant f64 -DNEED_F16 -DNEED_I16 -DWITH_F64
//! variant f64_bits -DNEED_F16 -DNEED_I16 -DF64_BITS
#include "common.glsl"
#include "dtype_codes.h"
#ifdef F64_BITS
#include "f64_bits.glsl"
#endif

#ifdef WITH_F64
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#define FT double
#else
#define FT float
#endif

#include "copy_push.h"

const uint WG = COPY_WG;
layout(local_size_x = WG) in;

bool is_float_code(int t) { return t == DT_F32 || t == DT_F16 || t == DT_BF16 || t == DT_F64; }

FT load_float(uint off) {
  switch (pc.src_dtype) {
    case DT_F32: return FT(BufF32(pc.src).v[off]);
    case DT_F16: return FT(BufF16(pc.src).v[off]);
    case DT_BF16: return FT(bf16_to_f32(uint(BufU16(pc.src).v[off])));
#ifdef WITH_F64
    case DT_F64: return BufF64(pc.src).v[off];
#elif defined(F64_BITS)
    case DT_F64: return f32_from_f64_bits(uint64_t(BufI64(pc.src).v[off]));
#endif
    case DT_I64: return FT(BufI64(pc.src).v[off]);
    case DT_I32: return FT(BufI32(pc.src).v[off]);
    case DT_I16: return FT(BufI16(pc.src).v[off]);
    case DT_I8: return FT(BufI8(pc.src).v[off]);
    default: return FT(BufU8(pc.src).v[off]);
  }
}

int64_t load_int(uint off) {
  switch (pc.src_dtype) {
    case DT_I64: return BufI64(pc.src).v[off];
    case DT_I32: return int64_t(BufI32(pc.src).v[off]);
    case DT_I16: return int64_t(BufI16(pc.src).v[off]);
    case DT_I8: return int64_t(BufI8(pc.src).v[off]);
    default: return int64_t(BufU8(pc.src).v[off]);
  }
}

void store_float(uint off, FT v) {
  switch (pc.dst_dtype) {
    case DT_F32: BufF32(pc.dst).v[off] = float(v); break;
    case DT_F16: BufF16(pc.dst).v[off] = float16_t(float(v)); break;
    case DT_BF16: BufU16(pc.dst).v[off] = uint16_t(f32_to_bf16(float(v))); break;
#ifdef WITH_F64
    case DT_F64: BufF64(pc.dst).v[off] = v; break;
#elif defined(F64_BITS)
    case DT_F64: BufI64(pc.dst).v[off] = int64_t(f64_bits_from_f32(v)); break;
#endif
    case DT_I64: BufI64(pc.dst).v[off] = int64_t(v); break;
    case DT_I32: BufI32(pc.dst).v[off] = int(v); break;
    case DT_I16: BufI16(pc.dst).v[off] = int16_t(int(v)); break;
    case DT_I8: BufI8(pc.dst).v[off] = int8_t(int(v)); break;
    case DT_BOOL: BufU8(pc.dst).v[off] = uint8_t(v != FT(0)); break;
    default: BufU8(pc.dst).v[off] = uint8_t(int(v)); break;
  }
}

void store_int(uint off, int64_t v) {
  switch (pc.dst_dtype) {
    case DT_F32: BufF32(pc.dst).v[off] = float(v); break;
    case DT_F16: BufF16(pc.dst).v[off] = float16_t(float(v)); break;
    case DT_BF16: BufU16(pc.dst).v[off] = uint16_t(f32_to_bf16(float(v))); break;
#ifdef WITH_F64
    case DT_F64: BufF64(pc.dst).v[off] = double(v); break;
#elif defined(F64_BITS)
    case DT_F64: BufI64(pc.dst).v[off] = int64_t(f64_bits_from_int(v)); break;
#endif
    case DT_I64: BufI64(pc.dst).v[off] = v; break;
    case DT_I32: BufI32(pc.dst).v[off] = int(v); break;
    case DT_I16: BufI16(pc.dst).v[off] = int16_t(v); break;
    case DT_I8: BufI8(pc.dst).v[off] = int8_t(v); break;
    case DT_BOOL: BufU8(pc.dst).v[off] = uint8_t(v != 0); break;
    default: BufU8(pc.dst).v[off] = uint8_t(v); break;
  }
}

void main() {
  uint i = linear_id();
  if (i >= pc.numel) return;
  uint r = i;
  int d_off = 0, s_off = 0;
  for (int d = 0; d < pc.ndim; ++d) {
    int idx = int(r % uint(pc.size[d]));
    r /= uint(pc.size[d]);
    d_off += idx * pc.dst_stride[d];
    s_off += idx * pc.src_stride[d];
  }
#ifdef F64_BITS
  // Exact where a float32 step would not be: float64 itself, integers and bool. Into
  // float16 and bfloat16 float64 goes through float32, as the CPU's conversion does.
  if (pc.src_dtype == DT_F64 && !is_float_code(pc.dst_dtype)) {
    uint64_t b = uint64_t(BufI64(pc.src).v[s_off]);
    if (pc.dst_dtype == DT_BOOL) BufU8(pc.dst).v[d_off] = uint8_t(f64_bits_nonzero(b));
    else store_int(uint(d_off), int_from_f64_bits(b));
    return;
  }
  if (pc.src_dtype == DT_F64 && pc.dst_dtype == DT_F64) {
    BufI64(pc.dst).v[d_off] = BufI64(pc.src).v[s_off];
    return;
  }
  if (pc.dst_dtype == DT_F64 && !is_float_code(pc.src_dtype) && pc.src_dtype != DT_BOOL) {
    store_int(uint(d_off), load_int(uint(s_off)));
    return;
  }
#endif
  if (pc.src_dtype == DT_BOOL && pc.dst_dtype != DT_BOOL) {
    store_int(uint(d_off), int64_t(BufU8(pc.src).v[s_off] != uint8_t(0)));
  } else if (is_float_code(pc.src_dtype) || is_float_code(pc.dst_dtype)) {
    store_float(uint(d_off), load_float(uint(s_off)));
  } else {
    store_int(uint(d_off), load_int(uint(s_off)));
  }
}
