#version 450
// Reductions over the middle dim of a contiguous [outer, r, inner] tensor.
// The r dim may be cut into `splits` chunks of `chunk` elements; every chunk
// reduces to one output, so the output is [outer, splits, inner] (splits == 1
// for a single pass). A first pass of a split reduction writes accumulator-
// typed partials (REDUCE_OUT_ACC) that a second pass reads back (REDUCE_IN_ACC).
//
// Specialization constants: 0 = op (ReduceOp order of ops/reduce.h),
// 1 = row mode (1: one workgroup per output, inner == 1; 0: one thread per
// output looping over its chunk, coalesced along inner), 2 = workgroup size.
//! dtypes f32 f16 f64 i32 i64 u8
#include "common.glsl"
#include "reduce_push.h"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = 0;
layout(constant_id = 1) const int ROW = 0;
layout(constant_id = 2) const uint WG = 256;

#if defined(ST_F32)
#define BUF BufF32
#define ABUF BufF32
#define ACC float
#define IS_FLOAT 1
#elif defined(ST_F16)
#define BUF BufF16
#define ABUF BufF32
#define ACC float
#define IS_FLOAT 1
#elif defined(ST_F64)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#define BUF BufF64
#define ABUF BufF64
#define ACC double
#define IS_FLOAT 1
#elif defined(ST_I32)
#define BUF BufI32
#define ABUF BufI32
#define ACC int
#elif defined(ST_I64)
#define BUF BufI64
#define ABUF BufI64
#define ACC int64_t
#else
#define BUF BufU8
#define ABUF BufI32
#define ACC int
#endif


const bool TRACK_IDX = OP == REDUCE_MAX || OP == REDUCE_MIN || OP == REDUCE_ARGMAX || OP == REDUCE_ARGMIN;
const bool IS_MAX = OP == REDUCE_MAX || OP == REDUCE_ARGMAX;
const uint EMPTY = 0x7fffffffu;  // index of the identity element: loses every tie

ACC identity() {
  switch (OP) {
    case REDUCE_PROD: case REDUCE_ALL: return ACC(1);
#ifdef IS_FLOAT
    case REDUCE_MAX: case REDUCE_ARGMAX: return ACC(uintBitsToFloat(0xff800000u));  // -inf
    case REDUCE_MIN: case REDUCE_ARGMIN: return ACC(uintBitsToFloat(0x7f800000u));  // +inf
#elif defined(ST_I64)
    case REDUCE_MAX: case REDUCE_ARGMAX: return int64_t(0x8000000000000000UL);
    case REDUCE_MIN: case REDUCE_ARGMIN: return int64_t(0x7fffffffffffffffUL);
#else
    case REDUCE_MAX: case REDUCE_ARGMAX: return int(0x80000000u);
    case REDUCE_MIN: case REDUCE_ARGMIN: return int(0x7fffffffu);
#endif
    default: return ACC(0);
  }
}

bool is_nan(ACC v) {
#ifdef IS_FLOAT
  return isnan(v);
#else
  return false;
#endif
}

// Whether (b, ib) replaces (a, ia) in a max/min: NaN wins, then the larger
// (smaller) value, then the smaller index.
bool takes(ACC a, uint ia, ACC b, uint ib) {
  bool na = is_nan(a), nb = is_nan(b);
  if (na || nb) return nb && (!na || ib < ia);
  if (a == b) return ib < ia;
  return IS_MAX ? b > a : b < a;
}

void combine(inout ACC a, inout uint ia, ACC b, uint ib) {
  switch (OP) {
    case REDUCE_SUM: a += b; break;
    case REDUCE_PROD: a *= b; break;
    case REDUCE_ALL: a = ACC(a != ACC(0) && b != ACC(0)); break;
    case REDUCE_ANY: a = ACC(a != ACC(0) || b != ACC(0)); break;
    default:
      if (takes(a, ia, b, ib)) {
        a = b;
        ia = ib;
      }
  }
}

ACC load(uint off) {
  if ((pc.flags & REDUCE_IN_ACC) != 0u) return ABUF(pc.in_ptr).v[off];
  ACC v = ACC(BUF(pc.in_ptr).v[off]);
  if (OP == REDUCE_ALL || OP == REDUCE_ANY) v = ACC(v != ACC(0));
  return v;
}

uint index_at(uint off, uint j) {
  if (TRACK_IDX && (pc.flags & REDUCE_IN_ACC) != 0u) return uint(BufI32(pc.in_idx).v[off]);
  return j;
}

void store(uint o, ACC v, uint idx) {
  if ((pc.flags & REDUCE_OUT_ACC) != 0u) {
    ABUF(pc.out_ptr).v[o] = v;
    if (TRACK_IDX) BufI32(pc.out_idx).v[o] = int(idx);
    return;
  }
  if ((pc.flags & REDUCE_SCALE) != 0u) {
#ifdef IS_FLOAT
    v *= pc.scale;
#else
    v = ACC(float(v) * pc.scale);
#endif
  }
  if ((pc.flags & REDUCE_WANT_VAL) != 0u) {
#if defined(ST_F16)
    BUF(pc.out_ptr).v[o] = float16_t(v);
#elif defined(ST_U8)
    BUF(pc.out_ptr).v[o] = uint8_t(v);
#else
    BUF(pc.out_ptr).v[o] = v;
#endif
  }
  if (TRACK_IDX && (pc.flags & REDUCE_WANT_IDX) != 0u) BufI64(pc.out_idx).v[o] = int64_t(idx);
}

shared ACC s_val[WG];
shared uint s_idx[WG];

void main() {
  if (ROW != 0) {
    // One workgroup per output (inner == 1); rows beyond gl_NumWorkGroups.x spill into y.
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.outer * pc.splits) return;  // uniform across the workgroup
    uint o = row / pc.splits, s = row - o * pc.splits;
    uint begin = s * pc.chunk, end = min(pc.r, begin + pc.chunk);
    uint base = o * pc.r;
    uint tid = gl_LocalInvocationID.x;
    ACC acc = identity();
    uint ai = EMPTY;
    for (uint j = begin + tid; j < end; j += WG)
      combine(acc, ai, load(base + j), index_at(base + j, j));
    s_val[tid] = acc;
    s_idx[tid] = ai;
    barrier();
    for (uint step = WG / 2; step > 0; step >>= 1) {
      if (tid < step) {
        combine(acc, ai, s_val[tid + step], s_idx[tid + step]);
        s_val[tid] = acc;
        s_idx[tid] = ai;
      }
      barrier();
    }
    if (tid == 0) store(row, acc, ai);
  } else {
    uint t = linear_id();
    if (t >= pc.outer * pc.splits * pc.inner) return;
    uint q = t / pc.inner;
    uint i = t - q * pc.inner;
    uint o = q / pc.splits, s = q - o * pc.splits;
    uint begin = s * pc.chunk, end = min(pc.r, begin + pc.chunk);
    uint off = (o * pc.r + begin) * pc.inner + i;
    ACC acc = identity();
    uint ai = EMPTY;
    for (uint j = begin; j < end; ++j, off += pc.inner)
      combine(acc, ai, load(off), index_at(off, j));
    store(t, acc, ai);
  }
}
