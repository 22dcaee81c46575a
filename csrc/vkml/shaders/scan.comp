#version 450
// Inclusive scans along the middle dim of a contiguous [outer, n, inner]
// tensor: cumsum, cumprod, cummax / cummin (values and int64 indices),
// logcumsumexp. Floats accumulate in fp32; the f32_acc64 variant (for float32
// logcumsumexp where the device has shaderFloat64) carries the running value in
// fp64 as PyTorch's CPU kernel does: near 1e4 one fp32 rounding per step is an
// error of 1e-3, which its backward (exp of the scan minus the input) magnifies.
//
// Specialization constants: 0 = op (0 sum, 1 prod, 2 max, 3 min, 4 logsumexp),
// 1 = mode, 2 = workgroup size. Modes:
//   0: one thread per (outer, inner) line, sequential.
//   1: rows (inner == 1) cut into chunks; one workgroup per chunk walks it in
//      tiles of WG elements (a shared-memory scan plus a running carry) and,
//      with several chunks, writes the chunk's total to `part` / `part_idx`.
//   2: after the chunk totals were scanned (into `scanned`, indices into
//      `scanned_idx` pointing at chunks), one thread per element folds the
//      total of all earlier chunks into it.
// Chunks bound each invocation's loop iterations: Mesa 22.3's lavapipe ends all loops
// of an invocation once they ran 65535 iterations together (DeviceInfo::
// loop_iteration_limit), so there a long line scanned by one thread is moved last first.
//
// cummax/cummin follow PyTorch's CPU loop: a later element replaces the
// running one when it is >= (<= for min) or NaN, unless the running one is NaN
// and the new one is not; that choice is associative, so tiles may combine.
//! dtypes f32 f16 bf16 f64 i32 i64 u8
//! dtypes f32 suffix=acc64 -DACC64
#include "common.glsl"
#include "scan_push.h"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = 0;
layout(constant_id = 1) const int ROW = 0;
layout(constant_id = 2) const uint WG = 256;

#if defined(ST_F32)
#define BUF BufF32
#define PBUF BufF32
#ifdef ACC64
#define ACC double
#define TO_ST(x) float(x)
#else
#define ACC float
#define TO_ST(x) (x)
#endif
#define IS_FLOAT 1
#elif defined(ST_F64)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#include "f64_math.glsl"
#define BUF BufF64
#define PBUF BufF64
#define ACC double
#define TO_ST(x) (x)
#define IS_FLOAT 1
#elif defined(ST_F16)
#define BUF BufF16
#define PBUF BufF32
#define ACC float
#define TO_ST(x) float16_t(x)
#define IS_FLOAT 1
#elif defined(ST_BF16)
#define BUF BufU16
#define PBUF BufF32
#define ACC float
#define TO_ST(x) uint16_t(f32_to_bf16(x))
#define IS_FLOAT 1
#elif defined(ST_I32)
#define BUF BufI32
#define PBUF BufI32
#define ACC int
#define TO_ST(x) (x)
#elif defined(ST_I64)
#define BUF BufI64
#define PBUF BufI64
#define ACC int64_t
#define TO_ST(x) (x)
#else
#define BUF BufU8
#define PBUF BufU8
#define ACC uint
#define TO_ST(x) uint8_t(x)
#endif


const bool WITH_IDX = OP == SCAN_MAX || OP == SCAN_MIN;

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
  return OP == SCAN_MAX ? b >= a : b <= a;
}

#ifdef IS_FLOAT
// log(1 + x) for x in [0, 1]. log(1.0 + x) loses x's low bits (all of them below
// 2^-24), and lavapipe's log is only absolutely accurate near 1, so small x use
// log1p(x) = 2 atanh(x / (2 + x)) as a series.
float log1p_unit(float x) {
  if (x > 0.25) return log(1.0 + x);
  float s = x / (2.0 + x), s2 = s * s;
  return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (0.2 + s2 * (1.0 / 7.0 + s2 / 9.0))));
}
#endif


ACC combine(ACC a, ACC b) {
  if (OP == SCAN_SUM) return a + b;
  if (OP == SCAN_PROD) return a * b;
#ifdef IS_FLOAT
  if (OP == SCAN_LSE) {
    if (isnan(a) || isnan(b)) return a + b;
    ACC m = max(a, b), mn = min(a, b);
    if (isinf(mn) && mn < 0.0) return m;
#if defined(ACC64) || defined(ST_F64)
    if (m == mn) return m + 0.6931471805599453LF;
#else
    if (m == mn) return m + 0.6931471805599453;
#endif
#ifdef ST_F64
    return m + log1p_d(exp_d(mn - m));
#else
    return m + ACC(log1p_unit(exp(float(mn - m))));
#endif
  }
#endif
  return takes(a, b) ? b : a;
}

#ifdef ST_BF16
ACC ld(uint off) { return bf16_to_f32(uint(BUF(pc.in_ptr).v[off])); }
#else
ACC ld(uint off) { return ACC(BUF(pc.in_ptr).v[off]); }
#endif

shared ACC s_v[WG];
shared uint s_i[WG];

void main() {
  if (ROW == SCAN_LINE) {
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
  if (ROW == SCAN_CARRY) {
    uint e = linear_id();
    if (e >= pc.outer * pc.n) return;
    uint row = e / pc.n, j = e - row * pc.n;
    uint c = j / pc.chunk;
    if (c == 0u) return;
    uint slot = row * pc.nchunks + c - 1u;
    ACC carry = ACC(PBUF(pc.scanned).v[slot]);
    ACC v = ld(e);
    if (WITH_IDX) {
      if (!takes(carry, v)) {
        int64_t winner = BufI64(pc.scanned_idx).v[slot];
        BUF(pc.out_ptr).v[e] = TO_ST(carry);
        BufI64(pc.idx_ptr).v[e] = BufI64(pc.part_idx).v[row * pc.nchunks + uint(winner)];
      }
    } else {
      BUF(pc.out_ptr).v[e] = TO_ST(combine(carry, v));
    }
    return;
  }
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (group >= pc.outer * pc.nchunks) return;  // uniform across the workgroup
  uint row = group / pc.nchunks, c = group - row * pc.nchunks;
  uint tid = gl_LocalInvocationID.x;
  uint base = row * pc.n;
  uint first = c * pc.chunk;
  uint end = min(pc.n, first + pc.chunk);
  ACC carry = ACC(0);
  uint carry_i = 0u;
  for (uint start = first; start < end; start += WG) {
    uint j = start + tid;
    bool live = j < end;
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
    if (start > first) {
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
    // The tile's last element carries into the next tile.
    uint last = min(WG, end - start) - 1u;
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
  if (pc.nchunks > 1u && tid == 0u) {
#ifdef ST_U8
    PBUF(pc.part).v[group] = uint8_t(carry);
#elif defined(ACC64)
    PBUF(pc.part).v[group] = float(carry);
#else
    PBUF(pc.part).v[group] = carry;
#endif
    if (WITH_IDX) BufI64(pc.part_idx).v[group] = int64_t(carry_i);
  }
}
