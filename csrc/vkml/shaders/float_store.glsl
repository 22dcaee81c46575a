// Floating storage of the float-only kernels: float32, float16 or bfloat16 in
// memory, fp32 in registers. Define ST_F16 or ST_BF16 (with NEED_F16) before
// including common.glsl and this; neither means float32.
//   LD(P, O)       the element O of the buffer at address P, as float
//   STORE(P, O, V) writes float V there, rounded to nearest even
#if defined(ST_BF16)
#define LD(P, O) bf16_to_f32(uint(BufU16(P).v[O]))
#define STORE(P, O, V) BufU16(P).v[O] = uint16_t(f32_to_bf16(V))
#elif defined(ST_F16)
#define LD(P, O) float(BufF16(P).v[O])
#define STORE(P, O, V) BufF16(P).v[O] = float16_t(V)
#else
#define LD(P, O) BufF32(P).v[O]
#define STORE(P, O, V) BufF32(P).v[O] = (V)
#endif
