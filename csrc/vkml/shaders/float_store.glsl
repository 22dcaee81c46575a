// Floating storage of the float-only kernels: float32, float16 or bfloat16 in
// memory, fp32 in registers; or float64 in both, for the kernels that declare f64.
// Define ST_F16 or ST_BF16 (with NEED_F16), or ST_F64, before including common.glsl
// and this; none means float32.
//   FT             the arithmetic type: float, or double for ST_F64
//   LD(P, O)       the element O of the buffer at address P, as FT
//   STORE(P, O, V) writes FT V there, rounded to nearest even
#if defined(ST_F64)
#define FT double
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#define LD(P, O) BufF64(P).v[O]
#define STORE(P, O, V) BufF64(P).v[O] = (V)
double round_to_storage(double f) { return f; }
#elif defined(ST_BF16)
#define FT float
#define LD(P, O) bf16_to_f32(uint(BufU16(P).v[O]))
#define STORE(P, O, V) BufU16(P).v[O] = uint16_t(f32_to_bf16(V))
#elif defined(ST_F16)
#define FT float
#define LD(P, O) float(BufF16(P).v[O])
#define STORE(P, O, V) BufF16(P).v[O] = float16_t(V)
#else
#define FT float
#define LD(P, O) BufF32(P).v[O]
#define STORE(P, O, V) BufF32(P).v[O] = (V)
#endif
