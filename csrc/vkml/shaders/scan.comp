#version 450
// Inclusive scans along the middle dim of a contiguous [outer, n, inner]
// tensor: cumsum, cumprod, cummax / cummin (values and int64 indices),
// logcumsumexp. Floats accumulate in fp32.
//
// Specialization constants: 0 = op (0 sum, 1 prod, 2 max, 3 min, 4 logsumexp),
// 1 = row mode (1: one workgroup per row, inner == 1, walking the row in tiles
// of WG elements with a shared-memory scan and a carry; 0: one thread per
// (outer, inner) line, sequential), 2 = workgroup size.
//
// cummax/cummin follow PyTorch's CPU loop: a later element replaces the
// running one when it is >= (<= for min) or NaN, unless the running one is NaN
// and the new one is not; that choice is associative, so tiles may combine.
//! variant f32 -DST_F32
//! variant f16 -DST_F16 -DNEED_F16
//! variant i32 -DST_I32
//! variant i64 -DST_I64
//! variant u8 -DST_U8
#include "common.glsl"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = 0;
layout(constant_id = 1) const int ROW = 0;
layout(constant_id = 2) const uint WG = 256;

#define S_SUM 0
#define S_PROD 1
#define S_MAX 2
#define S_MIN 3
#define S_LSE 4

#if defined(ST_F32)
#define BUF BufF32
#define ACC float
#define TO_ST(x) (x)
#define IS_FLOAT 1
#elif defined(ST_F16)
#define BUF BufF16
#define ACC float
#define TO_ST(x) float16_t(x)
#define IS_FLOAT 1
#elif defined(ST_I32)
#define BUF BufI32
#define ACC int
#define TO_ST(x) (x)
#elif defined(ST_I64)
#define BUF BufI64
#define ACC int64_t
#define TO_ST(x) (x)
#else
#define BUF BufU8
#define ACC uint
#define TO_ST(x) uint8_t(x)
#endif

layout(push_constant, scalar) uniform PC {
  uint64_t in_ptr;
  uint64_t out_ptr;
  uint64_t idx_ptr;  // int64 indices (max / min)
  uint outer;
  uint n;
  uint inner;
} pc;

const bool WITH_IDX = OP == S_MAX || OP == S_MIN;

bool is_nan(ACC v) {
#ifdef IS_FLOAT
  return isnan(v);
#else
  return false;
#endif
}

// Does the later element b replace the running a (max / min)?
bool takes(ACC a, ACC b) {
  if (is_nan(b)) return true;
  if (is_nan(a)) return false;
  return OP == S_MAX ? b >= a : b <= a;
}

ACC combine(ACC a, ACC b) {
  if (OP == S_SUM) return a + b;
  if (OP == S_PROD) return a * b;
#ifdef IS_FLOAT
  if (OP == S_LSE) {
    if (isnan(a) || isnan(b)) return a + b;
    float m = max(a, b), mn = min(a, b);
    if (isinf(mn) && mn < 0.0) return m;
    if (m == mn) return m + 0.6931471805599453;
    return m + log(1.0 + exp(mn - m));
  }
#endif
  return takes(a, b) ? b : a;
}

ACC ld(uint off) { return ACC(BUF(pc.in_ptr).v[off]); }

shared ACC s_v[WG];
shared uint s_i[WG];

void main() {
  if (ROW == 0) {
    uint t = linear_id();
    if (t >= pc.outer * pc.inner) return;
    uint o = t / pc.inner, i = t - o * pc.inner;
    uint off = o * pc.n * pc.inner + i;
    ACC acc = ld(off);
    uint best = 0u;
    for (uint j = 0u; j < pc.n; ++j, off += pc.inner) {
      ACC x = ld(off);
      if (j > 0u) {
        if (WITH_IDX) {
          if (takes(acc, x)) {
            acc = x;
            best = j;
          }
        } else {
          acc = combine(acc, x);
        }
      }
      BUF(pc.out_ptr).v[off] = TO_ST(acc);
      if (WITH_IDX) BufI64(pc.idx_ptr).v[off] = int64_t(best);
    }
    return;
  }
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= pc.outer) return;  // uniform across the workgroup
  uint tid = gl_LocalInvocationID.x;
  uint base = row * pc.n;
  ACC carry = ACC(0);
  uint carry_i = 0u;
  for (uint start = 0u; start < pc.n; start += WG) {
    uint j = start + tid;
    bool live = j < pc.n;
    ACC v = live ? ld(base + j) : ACC(0);
    uint vi = j;
    s_v[tid] = v;
    s_i[tid] = vi;
    barrier();
    for (uint step = 1u; step < WG; step <<= 1) {
      ACC pv = v;
      uint pi = vi;
      bool has = tid >= step;
      if (has) {
        pv = s_v[tid - step];
        pi = s_i[tid - step];
      }
      barrier();
      if (has) {
        if (WITH_IDX) {
          if (!takes(pv, v)) {
            v = pv;
            vi = pi;
          }
        } else {
          v = combine(pv, v);
        }
        s_v[tid] = v;
        s_i[tid] = vi;
      }
      barrier();
    }
    if (start > 0u) {
      if (WITH_IDX) {
        if (!takes(carry, v)) {
          v = carry;
          vi = carry_i;
        }
      } else {
        v = combine(carry, v);
      }
    }
    if (live) {
      BUF(pc.out_ptr).v[base + j] = TO_ST(v);
      if (WITH_IDX) BufI64(pc.idx_ptr).v[base + j] = int64_t(vi);
    }
    // The tile's last element (or the row's last) carries into the next tile.
    uint last = min(WG, pc.n - start) - 1u;
    barrier();
    if (tid == last) {
      s_v[0] = v;
      s_i[0] = vi;
    }
    barrier();
    carry = s_v[0];
    carry_i = s_i[0];
    barrier();
  }
}
