#version 450
// linspace with the CPU's formula: start + step * i for i < halfway, and
// end - step * (n - 1 - i) from there, so that both ends are exact. Each value
// is one fused multiply-add (a single rounding), as in the CPU's compiled kernel.
// The f64 variant (shaderFloat64) also serves integer outputs, which the CPU
// computes in double and truncates (the adapter converts).
//! dtypes f32 f64
#include "common.glsl"

#if defined(ST_F64)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#define BUF BufF64
#define FT double
#else
#define BUF BufF32
#define FT float
#endif

#include "linspace_push.h"

const uint WG = LINSPACE_WG;
layout(local_size_x = WG) in;

void main() {
  uint i = linear_id();
  if (i >= pc.n) return;
  FT v = i < pc.halfway ? fma(pc.step, FT(i), pc.start)
                        : fma(-pc.step, FT(pc.n - 1u - i), pc.end);
  BUF(pc.dst).v[i] = v;
}
