#version 450
// Indexed gather and scatter along one dim, over an iteration shape of up to
// four collapsed dims with per-operand strides (innermost first):
//   gather:  dst[p] = src[p + idx[p] * dim_stride]
//   scatter: dst[p + idx[p] * dim_stride] (op)= src[p]   (or a scalar)
// index_select, gather, index.Tensor, take, embedding are gathers; scatter,
// scatter_add/reduce, index_add/copy/fill, index_put_ are scatters (the host
// sets the strides so that p + idx * dim_stride addresses the right element).
//
// Indices outside [-dim_size, dim_size) (negatives only with INDEX_WRAP) are never
// dereferenced: a gather writes 0, a scatter skips them. The host validates
// indices before launching, so this only keeps memory safe.
//
// Reductions with duplicate indices use atomics: native int32 atomics, a
// compare-and-swap loop on the bits for float32, a carry-propagating pair of
// 32-bit adds for int64 sums, and for the 16- and 8-bit dtypes (bfloat16, int16,
// int8, uint8, bool) a compare-and-swap loop on the aligned 32-bit word that
// holds the element (allocations are 4-byte aligned and sized, so the word never
// leaves the buffer; its other bytes are written back unchanged). bfloat16
// gathers and assignments move the 16 bits as they are. Reductions with no
// atomic form here (int64 prod/max/min, float64: its other moves go as int64
// bits) run with SERIAL = 1: one invocation walks every element in order, which
// is slow but exact and deterministic.
//
// Specialization constants: 0 = mode (0 gather, 1 scatter), 1 = op (0 assign,
// 1 add, 2 mul, 3 max, 4 min), 2 = serial.
//! dtypes f32 f16 bf16 f64 i32 i64 i16 i8 u8
#include "common.glsl"

layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const int OP = 0;
layout(constant_id = 2) const int SERIAL = 0;

#if defined(ST_F32)
#define BUF BufF32
#define V float
#define TO_ST(x) (x)
#define SCALAR_V uintBitsToFloat(uint(pc.scalar))
#define IS_FLOAT 1
#elif defined(ST_F16)
#define BUF BufF16
#define V float
#define TO_ST(x) float16_t(x)
#define SCALAR_V uintBitsToFloat(uint(pc.scalar))
#define IS_FLOAT 1
#elif defined(ST_BF16)
#define BUF BufU16
#define V float
#define TO_ST(x) uint16_t(f32_to_bf16(x))
#define SCALAR_V uintBitsToFloat(uint(pc.scalar))
#define IS_FLOAT 1
#elif defined(ST_F64)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
#define BUF BufF64
#define V double
#define TO_ST(x) (x)
#define SCALAR_V packDouble2x32(uvec2(uint(pc.scalar & 0xffffffffL), uint(pc.scalar >> 32)))
#define IS_FLOAT 1
#elif defined(ST_I32)
#define BUF BufI32
#define V int
#define TO_ST(x) (x)
#define SCALAR_V int(pc.scalar)
#elif defined(ST_I64)
#define BUF BufI64
#define V int64_t
#define TO_ST(x) (x)
#define SCALAR_V pc.scalar
#elif defined(ST_I16)  // int16 and int8 combine in int32 and wrap when stored
#define BUF BufI16
#define V int
#define TO_ST(x) int16_t(x)
#define SCALAR_V int(pc.scalar)
#elif defined(ST_I8)
#define BUF BufI8
#define V int
#define TO_ST(x) int8_t(x)
#define SCALAR_V int(pc.scalar)
#else
#define BUF BufU8
#define V uint
#define TO_ST(x) uint8_t(((pc.flags & INDEX_BOOL) != 0u) ? uint((x) != 0u) : (x))
#define SCALAR_V uint(pc.scalar)
#endif

#include "index_push.h"

const uint WG = INDEX_WG;
layout(local_size_x = WG) in;

#ifdef ST_BF16
V ld(uint64_t p, int off) { return bf16_to_f32(uint(BUF(p).v[off])); }
#else
V ld(uint64_t p, int off) { return V(BUF(p).v[off]); }
#endif

// The bits of a 16- or 8-bit element inside its 32-bit word, as a value and back.
#if defined(ST_BF16)
const uint EL_BYTES = 2u;
V from_bits(uint b) { return bf16_to_f32(b); }
uint to_bits(V x) { return f32_to_bf16(x); }
#elif defined(ST_I16)
const uint EL_BYTES = 2u;
V from_bits(uint b) { return int(b << 16) >> 16; }
uint to_bits(V x) { return uint(x); }
#elif defined(ST_I8)
const uint EL_BYTES = 1u;
V from_bits(uint b) { return int(b << 24) >> 24; }
uint to_bits(V x) { return uint(x); }
#elif defined(ST_U8)
const uint EL_BYTES = 1u;
V from_bits(uint b) { return b; }
uint to_bits(V x) { return ((pc.flags & INDEX_BOOL) != 0u) ? uint(x != 0u) : x; }
#endif

V combine(V a, V b) {
  if (OP == INDEX_ADD) return a + b;
  if (OP == INDEX_MUL) return a * b;
#ifdef IS_FLOAT
  if (isnan(a)) return a;
  if (isnan(b)) return b;
#endif
  if (OP == INDEX_MAX) return max(a, b);
  if (OP == INDEX_MIN) return min(a, b);
  return b;
}

void reduce_into(int off, V v) {
  if (OP == INDEX_ASSIGN) {
    BUF(pc.dst).v[off] = TO_ST(v);
    return;
  }
  if (SERIAL != 0) {
    BUF(pc.dst).v[off] = TO_ST(combine(ld(pc.dst, off), v));
    return;
  }
#if defined(ST_F32)
  BufU32 w = BufU32(pc.dst);
  uint old = w.v[off];
  for (;;) {
    uint nv = floatBitsToUint(combine(uintBitsToFloat(old), v));
    uint prev = atomicCompSwap(w.v[off], old, nv);
    if (prev == old) break;
    old = prev;
  }
#elif defined(ST_BF16) || defined(ST_I16) || defined(ST_I8) || defined(ST_U8)
  const uint64_t at = pc.dst + uint64_t(off) * uint64_t(EL_BYTES);
  BufU32 w = BufU32(at & ~3UL);
  const uint sh = uint(at & 3UL) * 8u, mask = (1u << (8u * EL_BYTES)) - 1u;
  uint old = w.v[0];
  for (;;) {
    uint bits = to_bits(combine(from_bits((old >> sh) & mask), v)) & mask;
    uint nv = (old & ~(mask << sh)) | (bits << sh);
    uint prev = atomicCompSwap(w.v[0], old, nv);
    if (prev == old) break;
    old = prev;
  }
#elif defined(ST_I32)
  if (OP == INDEX_ADD) {
    atomicAdd(BufI32(pc.dst).v[off], v);
  } else if (OP == INDEX_MAX) {
    atomicMax(BufI32(pc.dst).v[off], v);
  } else if (OP == INDEX_MIN) {
    atomicMin(BufI32(pc.dst).v[off], v);
  } else {
    BufI32 w = BufI32(pc.dst);
    int old = w.v[off];
    for (;;) {
      int prev = atomicCompSwap(w.v[off], old, old * v);
      if (prev == old) break;
      old = prev;
    }
  }
#elif defined(ST_I64)
  // Only sums reach here: the low words add atomically, and the carry out of
  // each low add goes into the high word, so the final value is exact.
  BufU32 w = BufU32(pc.dst);
  uint lo = uint(uint64_t(v) & 0xffffffffUL);
  uint hi = uint(uint64_t(v) >> 32);
  uint old = atomicAdd(w.v[2 * off], lo);
  uint carry = (old + lo < old) ? 1u : 0u;
  atomicAdd(w.v[2 * off + 1], hi + carry);
#endif
}

void process(uint i) {
  int d_off = 0, s_off = 0, i_off = 0;
  uint r = i;
  for (int d = 0; d < 4; ++d) {
    uint sz = uint(pc.size[d]);
    int c = int(r % sz);
    r /= sz;
    d_off += c * pc.dst_stride[d];
    s_off += c * pc.src_stride[d];
    i_off += c * pc.idx_stride[d];
  }
  int64_t k = (pc.flags & INDEX_IDX_I32) != 0u ? int64_t(BufI32(pc.idx).v[i_off])
                                           : BufI64(pc.idx).v[i_off];
  if ((pc.flags & INDEX_SKIP) != 0u && k == pc.skip) return;
  if (k < 0 && (pc.flags & INDEX_WRAP) != 0u) k += pc.dim_size;
  bool ok = k >= 0 && k < int64_t(pc.dim_size);
#ifdef ST_BF16
  if (MODE == INDEX_GATHER) {
    BUF(pc.dst).v[d_off] = ok ? BUF(pc.src).v[s_off + int(k) * pc.dim_stride] : uint16_t(0);
    return;
  }
  if (ok && OP == INDEX_ASSIGN && (pc.flags & INDEX_HAS_SRC) != 0u) {
    BUF(pc.dst).v[d_off + int(k) * pc.dim_stride] = BUF(pc.src).v[s_off];
    return;
  }
#endif
  if (MODE == INDEX_GATHER) {
    V v = ok ? ld(pc.src, s_off + int(k) * pc.dim_stride) : V(0);
    BUF(pc.dst).v[d_off] = TO_ST(v);
  } else if (ok) {
    V v = (pc.flags & INDEX_HAS_SRC) != 0u ? ld(pc.src, s_off) : SCALAR_V;
    reduce_into(d_off + int(k) * pc.dim_stride, v);
  }
}

void main() {
  uint i = linear_id();
  if (SERIAL != 0) {
    if (i == 0u)
      for (uint j = pc.serial_first; j < pc.serial_end; ++j) process(j);
    return;
  }
  if (i < pc.numel) process(i);
}
