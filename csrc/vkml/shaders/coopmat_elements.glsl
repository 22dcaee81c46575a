// The 16-bit elements the matrix-unit kernels (gemm_coopmat.comp, attention_coopmat.glsl)
// load and stage in shared memory: fp16 values, or bf16 as uint16_t bits (BF16), so
// that in the bf16 variants only the fragments carry the 16-bit float type that
// tools/spirv_bf16.py retypes. Include after common.glsl.
//   ELEM, ELEM4        the element and its quad (one 8-byte load or shared store)
//   BufE, BufE4        buffer references to them
//   elem_value(x)      an element as a float (the emulated variants' arithmetic)
//   to_elem(f)         a float rounded to an element (to nearest even)
//   staged(ARR, IDX)   element IDX of a shared array of quads
//   quad_of(w)         the quad whose bits are the two words w (16-byte loads as uvec4)
#if defined(BF16)
#define ELEM uint16_t
#define ELEM4 u16vec4
#define BufE BufU16
#define BufE4 BufU16x4
#define elem_value(x) bf16_to_f32(uint(x))
#define to_elem(f) uint16_t(f32_to_bf16(f))
#define quad_of(w) u16vec4(unpack16((w).x), unpack16((w).y))
#else
#define ELEM float16_t
#define ELEM4 f16vec4
#define BufE BufF16
#define BufE4 BufF16x4
#define elem_value(x) float(x)
#define to_elem(f) float16_t(f)
#define quad_of(w) f16vec4(unpackFloat2x16((w).x), unpackFloat2x16((w).y))
#endif
#define staged(ARR, IDX) ARR[(IDX) / 4u][(IDX) % 4u]

layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF16x4 { f16vec4 v[]; };
#if defined(BF16)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufU16x4 { u16vec4 v[]; };
#endif
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BufU32x4 { uvec4 v[]; };
