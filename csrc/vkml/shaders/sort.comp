#version 450
// Sort along rows of a contiguous [rows, n] tensor: a bitonic network over
// (key, original index) pairs, padded to a power of two P. The index breaks ties,
// so the network is a stable sort; NaN compares greater than every number (as in
// PyTorch), padding greater than everything.
//
// Specialization constants: 0 = mode, 1 = workgroup size WG (a block is 2 * WG
// elements, one compare-exchange per thread and step).
//   mode 0: sort each block in shared memory, reading the input (pads added); short
//           rows (P < block) share a block, so a workgroup never idles on tiny rows;
//   mode 1: one global compare-exchange step (pc.k, pc.j) with j >= block size;
//   mode 2: finish stage pc.k inside each block (steps j < block size).
// Modes 0 and 2 write the final [rows, n] keys and int64 indices when pc.last != 0,
// else the [rows, P] working buffers.
//! dtypes f32 i64
#include "common.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 512;

#ifdef ST_F32
#define KT float
#define KBUF BufF32
bool key_lt(float a, float b) { return !isnan(a) && (isnan(b) || a < b); }
#else
#define KT int64_t
#define KBUF BufI64
bool key_lt(int64_t a, int64_t b) { return a < b; }
#endif

#include "sort_push.h"

// The total order the network sorts by.
bool before(KT ka, uint ia, KT kb, uint ib) {
  bool pa = ia >= pc.n, pb = ib >= pc.n;
  if (pa || pb) return (pa && pb) ? ia < ib : pb;
  bool lt = pc.desc != 0 ? key_lt(kb, ka) : key_lt(ka, kb);
  bool gt = pc.desc != 0 ? key_lt(ka, kb) : key_lt(kb, ka);
  return lt || (!gt && ia < ib);
}

// The lower element of pair q of a step of width j.
uint pair_low(uint q, uint j) { return ((q & ~(j - 1u)) << 1) | (q & (j - 1u)); }

shared KT s_key[1024];
shared uint s_idx[1024];

// Shared position a of this workgroup's block starts at flat element `flat0`
// (flat = row * P + position in row); a block holds part of a row or whole rows.
void cmpx_shared(uint tid, uint flat0, uint k, uint j) {
  uint a = pair_low(tid, j), b = a + j;
  bool asc = (((flat0 + a) & (pc.P - 1u)) & k) == 0u;
  KT ka = s_key[a], kb = s_key[b];
  uint ia = s_idx[a], ib = s_idx[b];
  bool swap = asc ? before(kb, ib, ka, ia) : before(ka, ia, kb, ib);
  if (swap) {
    s_key[a] = kb;
    s_key[b] = ka;
    s_idx[a] = ib;
    s_idx[b] = ia;
  }
}

void main() {
  if (MODE == SORT_GLOBAL_STEP) {
    uint t = linear_id();
    if (t >= pc.pairs) return;
    uint half_p = pc.P >> 1;
    uint row = t / half_p;
    uint a = pair_low(t - row * half_p, pc.j), b = a + pc.j;
    bool asc = (a & pc.k) == 0u;
    uint ra = row * pc.P + a, rb = row * pc.P + b;
    KT ka = KBUF(pc.keys).v[ra], kb = KBUF(pc.keys).v[rb];
    uint ia = BufU32(pc.idx).v[ra], ib = BufU32(pc.idx).v[rb];
    bool swap = asc ? before(kb, ib, ka, ia) : before(ka, ia, kb, ib);
    if (swap) {
      KBUF(pc.keys).v[ra] = kb;
      KBUF(pc.keys).v[rb] = ka;
      BufU32(pc.idx).v[ra] = ib;
      BufU32(pc.idx).v[rb] = ia;
    }
    return;
  }
  uint block = 2u * WG;
  uint wgid = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wgid * WG >= pc.pairs) return;  // uniform over the workgroup
  uint total = pc.pairs * 2u;          // rows * P
  uint flat0 = wgid * block;
  uint tid = gl_LocalInvocationID.x;
  for (uint e = tid; e < block; e += WG) {
    uint f = flat0 + e;
    uint row = f / pc.P, g = f - row * pc.P;
    if (f >= total) {  // whole missing rows at the end of the last block: never stored
      s_key[e] = KT(0);
      s_idx[e] = 0xffffffffu;
    } else if (MODE == SORT_BLOCKS) {
      s_key[e] = g < pc.n ? KBUF(pc.in_keys).v[row * pc.n + g] : KT(0);
      s_idx[e] = g;
    } else {
      s_key[e] = KBUF(pc.keys).v[f];
      s_idx[e] = BufU32(pc.idx).v[f];
    }
  }
  barrier();
  if (MODE == SORT_BLOCKS) {
    uint kmax = min(block, pc.P);
    for (uint k = 2u; k <= kmax; k <<= 1) {
      for (uint j = k >> 1; j > 0u; j >>= 1) {
        cmpx_shared(tid, flat0, k, j);
        barrier();
      }
    }
  } else {  // SORT_BLOCK_MERGE
    for (uint j = WG; j > 0u; j >>= 1) {
      cmpx_shared(tid, flat0, pc.k, j);
      barrier();
    }
  }
  for (uint e = tid; e < block; e += WG) {
    uint f = flat0 + e;
    if (f >= total) continue;
    uint row = f / pc.P, g = f - row * pc.P;
    if (pc.last != 0u) {
      if (g < pc.n) {
        KBUF(pc.out_keys).v[row * pc.n + g] = s_key[e];
        BufI64(pc.out_idx).v[row * pc.n + g] = int64_t(s_idx[e]);
      }
    } else {
      KBUF(pc.keys).v[f] = s_key[e];
      BufU32(pc.idx).v[f] = s_idx[e];
    }
  }
}
