#version 450
// Softmax / log-softmax over the middle dim of a contiguous [outer, dim, inner]
// tensor, and their backward passes; fp32 math (double for the f64 variant, with
// exp and log of f64_math.glsl).
//
// Specialization constants: 0 = mode (0 softmax, 1 log_softmax, 2 softmax
// backward, 3 log_softmax backward), 1 = row mode (1: one workgroup per row,
// inner == 1; 0: one thread per (outer, inner) looping over dim), 2 = workgroup size,
// 3 = R, the row elements a thread keeps in registers.
//
// Forward keeps a running (max, sum of exp(x - max)) pair per thread (online
// softmax), merged across the workgroup, then writes the outputs in a second
// sweep. Backward reduces sum(g * y) (softmax) or sum(g) (log_softmax).
// Rows of up to R * WG elements (row mode) are read once into registers instead:
// forward reduces the max, then the sum of the exponentials it keeps, and writes
// from them (one read and one exp per element); backward keeps g and y.
//! dtypes f32 f16 f64
#include "common.glsl"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const int ROW = 0;
layout(constant_id = 2) const uint WG = 256;

#if defined(ST_F16)
#define BUF BufF16
#define STORE(P, O, V) BUF(P).v[O] = float16_t(V)
#elif defined(ST_F64)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#include "f64_math.glsl"
#define BUF BufF64
#define STORE(P, O, V) BUF(P).v[O] = (V)
#else
#define BUF BufF32
#define STORE(P, O, V) BUF(P).v[O] = (V)
#endif

#if defined(ST_F64)
#define FT double
#define EXP exp_d
#define LOG log_d
#else
#define FT float
#define EXP exp
#define LOG log
#endif

#include "softmax_push.h"

const bool FORWARD = MODE < SOFTMAX_BACKWARD;
#define NEG_INF uintBitsToFloat(0xff800000u)

FT ld(uint64_t p, uint off) { return FT(BUF(p).v[off]); }

// Running max with NaN propagation, and the sum of EXP(x - max).
void online_add(inout FT m, inout FT s, FT x) {
  FT mn = (isnan(x) || x > m) ? x : m;
  FT scale = (m == mn) ? FT(1.0) : EXP(m - mn);
  s = s * scale + ((x == NEG_INF) ? FT(0.0) : EXP(x - mn));
  m = mn;
}

void online_merge(inout FT m, inout FT s, FT m2, FT s2) {
  FT mn = (isnan(m2) || m2 > m) ? m2 : m;
  FT f1 = (m == mn) ? FT(1.0) : EXP(m - mn);
  FT f2 = (m2 == mn) ? FT(1.0) : EXP(m2 - mn);
  s = s * f1 + s2 * f2;
  m = mn;
}

// Per element: the term summed in backward.
FT bwd_term(uint off) {
  FT g = ld(pc.x, off);
  return MODE == SOFTMAX_BACKWARD ? g * ld(pc.y, off) : g;
}

void write(uint off, FT m, FT s) {
  if (FORWARD) {
    FT v = ld(pc.x, off) - m;
    STORE(pc.dst, off, MODE == SOFTMAX_FORWARD ? EXP(v) / s : v - LOG(s));
  } else {
    FT g = ld(pc.x, off), y = ld(pc.y, off);
    STORE(pc.dst, off, MODE == SOFTMAX_BACKWARD ? y * (g - s) : g - EXP(y) * s);
  }
}

shared FT s_m[WG];
shared FT s_s[WG];

layout(constant_id = 3) const uint R = 16;  // row elements a thread keeps in registers

FT max_nan(FT a, FT b) { return (isnan(b) || b > a) ? b : a; }

// The workgroup's max (NaN wins) or sum of v; every thread gets it.
FT reduce_row(FT v, bool is_max) {
  uint tid = gl_LocalInvocationID.x;
  s_s[tid] = v;
  barrier();
  for (uint step = WG / 2; step > 0; step >>= 1) {
    if (tid < step) {
      v = is_max ? max_nan(v, s_s[tid + step]) : v + s_s[tid + step];
      s_s[tid] = v;
    }
    barrier();
  }
  v = s_s[0];
  barrier();
  return v;
}

void row_in_registers(uint base) {
  uint tid = gl_LocalInvocationID.x;
  FT a[R], b[R];
  if (FORWARD) {
    FT m = NEG_INF;
    for (uint r = 0u; r < R; ++r) {
      uint j = tid + r * WG;
      a[r] = j < pc.dim ? ld(pc.x, base + j) : NEG_INF;
      m = max_nan(m, a[r]);
    }
    m = reduce_row(m, true);
    FT s = FT(0.0);
    for (uint r = 0u; r < R; ++r) {
      b[r] = a[r] == NEG_INF ? FT(0.0) : EXP(a[r] - m);
      s += b[r];
    }
    s = reduce_row(s, false);
    FT ls = MODE == SOFTMAX_LOG_FORWARD ? LOG(s) : FT(0.0);
    for (uint r = 0u; r < R; ++r) {
      uint j = tid + r * WG;
      if (j < pc.dim) STORE(pc.dst, base + j, MODE == SOFTMAX_FORWARD ? b[r] / s : (a[r] - m) - ls);
    }
  } else {
    FT s = FT(0.0);
    for (uint r = 0u; r < R; ++r) {
      uint j = tid + r * WG;
      a[r] = j < pc.dim ? ld(pc.x, base + j) : FT(0.0);
      b[r] = j < pc.dim ? ld(pc.y, base + j) : FT(0.0);
      s += MODE == SOFTMAX_BACKWARD ? a[r] * b[r] : a[r];
    }
    s = reduce_row(s, false);
    for (uint r = 0u; r < R; ++r) {
      uint j = tid + r * WG;
      if (j < pc.dim) STORE(pc.dst, base + j, MODE == SOFTMAX_BACKWARD ? b[r] * (a[r] - s) : a[r] - EXP(b[r]) * s);
    }
  }
}

void main() {
  if (ROW != 0) {
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.outer) return;  // uniform across the workgroup
    uint tid = gl_LocalInvocationID.x;
    uint base = row * pc.dim;
    if (pc.dim <= R * WG) {
      row_in_registers(base);
      return;
    }
    FT m = NEG_INF, s = FT(0.0);
    if (FORWARD) {
      for (uint j = tid; j < pc.dim; j += WG) online_add(m, s, ld(pc.x, base + j));
    } else {
      for (uint j = tid; j < pc.dim; j += WG) s += bwd_term(base + j);
    }
    s_m[tid] = m;
    s_s[tid] = s;
    barrier();
    for (uint step = WG / 2; step > 0; step >>= 1) {
      if (tid < step) {
        if (FORWARD) {
          online_merge(m, s, s_m[tid + step], s_s[tid + step]);
          s_m[tid] = m;
        } else {
          s += s_s[tid + step];
        }
        s_s[tid] = s;
      }
      barrier();
    }
    m = s_m[0];
    s = s_s[0];
    for (uint j = tid; j < pc.dim; j += WG) write(base + j, m, s);
  } else {
    uint t = linear_id();
    if (t >= pc.outer * pc.inner) return;
    uint o = t / pc.inner, i = t - o * pc.inner;
    uint base = o * pc.dim * pc.inner + i;
    FT m = NEG_INF, s = FT(0.0);
    uint off = base;
    if (FORWARD) {
      for (uint j = 0; j < pc.dim; ++j, off += pc.inner) online_add(m, s, ld(pc.x, off));
    } else {
      for (uint j = 0; j < pc.dim; ++j, off += pc.inner) s += bwd_term(off);
    }
    off = base;
    for (uint j = 0; j < pc.dim; ++j, off += pc.inner) write(off, m, s);
  }
}
