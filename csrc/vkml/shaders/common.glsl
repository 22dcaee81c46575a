// Shared by every kernel: extensions, buffer reference types, the linear index.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_8bit_storage : require
#ifdef NEED_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef NEED_I16
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_16bit_storage : require
#endif

layout(buffer_reference, scalar, buffer_reference_align = 4) buffer BufF32 { float v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer BufI32 { int v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer BufU32 { uint v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufI64 { int64_t v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 1) buffer BufU8 { uint8_t v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 1) buffer BufI8 { int8_t v[]; };
#ifdef NEED_F16
layout(buffer_reference, scalar, buffer_reference_align = 2) buffer BufF16 { float16_t v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 2) buffer BufU16 { uint16_t v[]; };
#endif
#ifdef NEED_I16
layout(buffer_reference, scalar, buffer_reference_align = 2) buffer BufI16 { int16_t v[]; };
#endif

// Grids wider than maxComputeWorkGroupCount[0] spill into y (see ops/launch.cpp).
// Each shader declares its workgroup width as the constant WG: lavapipe
// (Mesa 22.3) miscomputes arithmetic on gl_WorkGroupSize, so it is not used.
#define linear_id() \
  ((gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * WG + gl_LocalInvocationID.x)

float bf16_to_f32(uint bits) { return uintBitsToFloat(bits << 16); }
uint f32_to_bf16(float f) {
  uint u = floatBitsToUint(f);
  if (isnan(f)) return 0x7fc0u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
}

// f rounded to the nearest float16 (ties to even), kept in fp32, in integer steps:
// a compiler may drop float(float16_t(f)) as an identity (Mesa 26's lavapipe does).
float round_to_f16(float f) {
  uint u = floatBitsToUint(f), mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return f;  // NaN
  if (mag >= 0x477ff000u) return uintBitsToFloat((u & 0x80000000u) | 0x7f800000u);  // >= 65520
  if (mag < 0x38800000u) {  // below float16's smallest normal: steps of 2^-24
    float r = roundEven(uintBitsToFloat(mag) * 16777216.0) * (1.0 / 16777216.0);
    return uintBitsToFloat((u & 0x80000000u) | floatBitsToUint(r));
  }
  return uintBitsToFloat((u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu);
}

// f rounded to the storage dtype (ST_F16, ST_BF16; wider ones unchanged), kept in fp32.
float round_to_storage(float f) {
#if defined(ST_BF16)
  return bf16_to_f32(f32_to_bf16(f));
#elif defined(ST_F16)
  return round_to_f16(f);
#else
  return f;
#endif
}
