#version 450
// Convolution as an implicit GEMM with shared-memory tiles: the im2col operand is
// gathered tile by tile straight from the activations, never materialised. Same
// operands and layouts as conv.comp (which handles few channels per group, where a
// 32-row tile would be mostly empty). Per group g:
//   mode 0, forward:     y[n, m, o]  = sum_k w[m, k] * x~[k, (n, o)]     M = Co/g,  K = Ci/g*kvol
//   mode 1, data grad:   gx[n, m, i] = sum_k w~[m, k] * gy~[k, (n, i)]   M = Ci/g,  K = Co/g*kvol
//   mode 2, weight grad: gw[m, col]  = sum_k gy[m, k] * x~[k, col]       M = Co/g,  K = N*O
//   mode 3, data grad of a strided, undilated convolution, by phases: input positions
//     i with the same (i + pad) mod stride (a phase) receive gy only through kernel
//     positions with that residue, so each phase is its own GEMM over those alone
//     (mode 1 would multiply stride^d - 1 zeros for every product it needs). The
//     grid holds every phase's tiles; tiles past a phase's columns exit.
// Each workgroup computes a BM x BM tile of C (32 with 64 threads, or 64 with 256 on
// GPUs, 4 x 4 per thread, in K steps of 16; or 128 with 256, 8 x 8 per thread, in K
// steps of 8); fp32 accumulation. A thread's rows (and columns) are groups of four, NT groups apart.
// Split-K (weight grad, whose K = N x positions is long while C is small): with
// CONV_PARTIAL the grid repeats the tiles once per K slice and each workgroup writes raw
// fp32 sums to scratch [splits][Co x Ci/g x kvol] at dst; a second dispatch with
// CONV_SUM runs a thread per output, adding the slices in order (deterministic) from
// scratch at p0 into dst.
// The gathers' row indices advance as mixed-radix digits (Digits), so the K loop has
// no integer division (strided data grads aside).
// The next K step's tile elements are loaded into registers before the current step's
// products, so their global-memory latency overlaps the arithmetic (register prefetch,
// as in gemm.comp). Not done: vectorised loads (the gathers are rarely contiguous).
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "float_store.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 64;  // (BM / TT)^2 threads of TT x TT outputs
layout(constant_id = 2) const uint BM = 32;
layout(constant_id = 3) const uint TT = 4;   // 4 or 8
layout(constant_id = 4) const uint TK = 16;  // K step: 16, or 8 for the 128 tile
const uint TM = BM, TN = BM, NT = BM / TT;
const uint TQ = TT / 4;  // groups of four rows (columns) per thread

#include "conv_push.h"

float ld(uint64_t p, uint off) { return LD(p, off); }

ivec3 unflat(uint f, ivec3 sz) {
  return ivec3(f / uint(sz.y * sz.z), (f / uint(sz.z)) % uint(sz.y), f % uint(sz.z));
}
uint flat3(ivec3 c, ivec3 sz) { return uint((c.x * sz.y + c.y) * sz.z + c.z); }
bool inside(ivec3 c, ivec3 sz) {
  return all(greaterThanEqual(c, ivec3(0))) && all(lessThan(c, sz));
}

// Staged [k][m] and [k][n] as vec4s: a thread's four rows (columns) are one 16-byte
// read, so a 4 x 4 block of multiply-adds costs two shared reads instead of eight.
// Rows are padded by a vec4: stage() writes A down its k column. Two stages: a K step
// multiplies from one while the next step's elements are stored into the other, so one
// barrier per step suffices.
shared vec4 sA[2][TK][TM / 4 + 1];
shared vec4 sB[2][TK][TN / 4 + 1];

uint ispat, ospat, kvol, cig, cog, g;

// A flat index as mixed-radix digits: the quotient q and a 3-D position p in a box of
// size sz. The K loop steps its row indices by adding digits with carries, so the
// gathers divide only once, before the loop.
struct Digits {
  uint q;
  ivec3 p;
};

Digits split(uint f, ivec3 sz) {
  uint vol = uint(sz.x * sz.y * sz.z);
  if (vol == 0u) return Digits(0u, ivec3(0));  // an empty phase: never loaded
  uint q = f / vol;
  return Digits(q, ivec3(unflat(f - q * vol, sz)));
}

// a + b, with b's digits below their radices (b = split(...)): one carry at most each.
Digits advance(Digits a, Digits b, ivec3 sz) {
  ivec3 p = a.p + b.p;
  uint q = a.q + b.q;
  if (p.z >= sz.z) {
    p.z -= sz.z;
    p.y += 1;
  }
  if (p.y >= sz.y) {
    p.y -= sz.y;
    p.x += 1;
  }
  if (p.x >= sz.x) {
    p.x -= sz.x;
    q += 1u;
  }
  return Digits(q, p);
}

// Mode 3's phase: ph (in [0, str)), its first input position f, its input positions
// per dim (cnt, f + j * str for j < cnt), its kernel positions per dim (kc,
// ph + j * str) and the output position of its first input through its first kernel
// position (ob).
ivec3 ph, ph_f, ph_cnt, ph_kc, ph_ob;

void prepare_phase(uint phase) {
  ph = split(phase, pc.str).p;
  ph_f = (ph + pc.str - pc.pad % pc.str) % pc.str;
  ph_cnt = max(pc.isz - ph_f + pc.str - 1, ivec3(0)) / pc.str;
  ph_kc = max(pc.ksz - ph + pc.str - 1, ivec3(0)) / pc.str;
  ph_ob = (ph_f + pc.pad - ph) / pc.str;
}

// A's element (m, k); kd: k as digits over (1, 1, kvol) (mode 1), (1, 1, ospat) (mode
// 2) or ph_kc (mode 3).
float load_a(uint m, uint k, Digits kd) {
  if (MODE == CONV_FORWARD) return ld(pc.p1, ((g * cog + m) * cig) * kvol + k);
  if (MODE == CONV_DATA_GRAD) return ld(pc.p1, ((g * cog + kd.q) * cig + m) * kvol + uint(kd.p.z));
  if (MODE == CONV_PHASED_DATA_GRAD)
    return ld(pc.p1, ((g * cog + kd.q) * cig + m) * kvol + flat3(ph + kd.p * pc.str, pc.ksz));
  return ld(pc.p1, (kd.q * pc.co + g * cog + m) * ospat + uint(kd.p.z));
}

// B's column is the same in every K step for a thread (WG is a multiple of TN), so the
// part of its gather that depends on the column alone is worked out once: c_pos and
// c_off per mode, below; load_b then adds what the row k contributes.
ivec3 c_pos;
uint c_off;

void prepare_column(uint col) {
  if (MODE == CONV_FORWARD) {  // col = (image, output position): x at o * str - pad + kpos * dil
    uint img = col / ospat;
    c_pos = unflat(col - img * ospat, pc.osz) * pc.str - pc.pad;
    c_off = (img * pc.ci + g * cig) * ispat;
  } else if (MODE == CONV_DATA_GRAD) {  // col = (image, input position): gy at (t - kpos * dil) / str
    uint img = col / ispat;
    c_pos = unflat(col - img * ispat, pc.isz) + pc.pad;
    c_off = (img * pc.co + g * cog) * ospat;
  } else if (MODE == CONV_PHASED_DATA_GRAD) {  // col = (image, j): gy at ph_ob + j - the kernel digits
    Digits d = split(col, ph_cnt);
    c_pos = ph_ob + d.p;
    c_off = (d.q * pc.co + g * cog) * ospat;
  } else {  // col = (channel in group, kernel position): x at o * str + kpos * dil - pad
    uint cc = col / kvol;
    c_pos = unflat(col - cc * kvol, pc.ksz) * pc.dil - pc.pad;
    c_off = (g * cig + cc) * ispat;
  }
}

// B's row k as digits: (channel, kernel position) over ksz in modes 0 and 1, (image,
// output position) over osz in mode 2, (channel, kernel digits) over ph_kc in mode 3.
float load_b(Digits k) {
  if (MODE == CONV_PHASED_DATA_GRAD) {
    ivec3 o = c_pos - k.p;
    if (any(lessThan(o, ivec3(0))) || any(greaterThanEqual(o, pc.osz))) return 0.0;
    return ld(pc.p0, c_off + k.q * ospat + flat3(o, pc.osz));
  }
  if (MODE == CONV_FORWARD) {
    ivec3 i = c_pos + k.p * pc.dil;
    if (!inside(i, pc.isz)) return 0.0;
    return ld(pc.p0, c_off + k.q * ispat + flat3(i, pc.isz));
  }
  if (MODE == CONV_WEIGHT_GRAD) {
    ivec3 i = k.p * pc.str + c_pos;
    if (!inside(i, pc.isz)) return 0.0;
    return ld(pc.p0, k.q * pc.ci * ispat + c_off + flat3(i, pc.isz));
  }
  // gy~: the output position that input position t reaches through kernel position k.p.
  ivec3 o = c_pos - k.p * pc.dil;
  if (any(lessThan(o, ivec3(0)))) return 0.0;
  if (any(greaterThan(pc.str, ivec3(1)))) {  // uniform: strided convolutions only divide
    if (any(notEqual(o % pc.str, ivec3(0)))) return 0.0;
    o /= pc.str;
  }
  if (any(greaterThanEqual(o, pc.osz))) return 0.0;
  return ld(pc.p0, c_off + k.q * ospat + flat3(o, pc.osz));
}

// Each thread stages R elements of each tile per K step (WG is a multiple of TK and
// TN, so its A column and B column stay fixed): 8 for BM 32 with 64 threads, 4 for 64
// with 256, and 4 for 128 with 256 in steps of 8.
const uint R = (TM * TK) / WG;
float ra[8], rb[8];

// Loads this thread's elements of the tiles of the K step at k0 into ra / rb: A rows
// from m0, its A column as digits a_col, its B rows from b_row (digits) in steps of
// b_next, in its B column col.
void fetch(uint k0, uint k_end, uint m0, uint M, uint col, uint N, Digits a_col, Digits b_row,
           Digits b_next, ivec3 b_sz) {
  uint tid = gl_LocalInvocationID.x;
  Digits kb_d = b_row;
  [[unroll]] for (uint r = 0; r < R; ++r) {
    uint e = tid + r * WG;
    uint kk = e % TK, mm = e / TK;  // A rows are contiguous in k for the forward
    uint m = m0 + mm, k = k0 + kk;
    ra[r] = (m < M && k < k_end) ? load_a(m, k, a_col) : 0.0;
    uint kb = e / TN, k2 = k0 + kb;
    rb[r] = (col < N && k2 < k_end) ? load_b(kb_d) : 0.0;
    kb_d = advance(kb_d, b_next, b_sz);
  }
}

void stage(uint st, uint nn) {
  uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0; r < R; ++r) {
    uint e = tid + r * WG;
    uint m = e / TK;
    sA[st][e % TK][m / 4u][m % 4u] = ra[r];
    sB[st][e / TN][nn / 4u][nn % 4u] = rb[r];
  }
}

// The output chunk of main()'s epilogue, element e of 4 NT x NT quads: the first half in
// sA, the second in sB, each read as its flat [2][TK][TM / 4 + 1] layout.
const uint SROW = TM / 4 + 1;
const uint CHUNK_HALF = 2u * NT * NT;
void chunk_put(uint e, vec4 v) {
  if (e < CHUNK_HALF) {
    sA[e / (TK * SROW)][e / SROW % TK][e % SROW] = v;
  } else {
    e -= CHUNK_HALF;
    sB[e / (TK * SROW)][e / SROW % TK][e % SROW] = v;
  }
}
vec4 chunk_get(uint e) {
  if (e < CHUNK_HALF) return sA[e / (TK * SROW)][e / SROW % TK][e % SROW];
  e -= CHUNK_HALF;
  return sB[e / (TK * SROW)][e / SROW % TK][e % SROW];
}

// Output (m, col) of the implicit GEMM, with its bias, to its place in y, gx or gw (or
// the split-K partials).
void store_out(uint m, uint col, float v, uint slice, bool partial, uint total) {
  if (MODE == CONV_FORWARD) {
    uint c = g * cog + m, nn = col / ospat;
    float b = pc.p2 != 0 ? ld(pc.p2, c) : 0.0;
    STORE(pc.dst, (nn * pc.co + c) * ospat + col % ospat, v + b);
  } else if (MODE == CONV_DATA_GRAD) {
    uint c = g * cig + m, nn = col / ispat;
    float b = pc.p2 != 0 ? ld(pc.p2, c) : 0.0;
    STORE(pc.dst, (nn * pc.ci + c) * ispat + col % ispat, v + b);
  } else if (MODE == CONV_PHASED_DATA_GRAD) {
    uint c = g * cig + m;
    Digits d = split(col, ph_cnt);
    float b = pc.p2 != 0 ? ld(pc.p2, c) : 0.0;
    STORE(pc.dst, (d.q * pc.ci + c) * ispat + flat3(ph_f + d.p * pc.str, pc.isz), v + b);
  } else if (partial) {
    BufF32(pc.dst).v[slice * total + (g * cog + m) * cig * kvol + col] = v;
  } else {
    STORE(pc.dst, (g * cog + m) * cig * kvol + col, v);
  }
}

void main() {
  ispat = uint(pc.isz.x * pc.isz.y * pc.isz.z);
  ospat = uint(pc.osz.x * pc.osz.y * pc.osz.z);
  kvol = uint(pc.ksz.x * pc.ksz.y * pc.ksz.z);
  cig = pc.ci / pc.groups;
  cog = pc.co / pc.groups;
  uint M = MODE == CONV_DATA_GRAD || MODE == CONV_PHASED_DATA_GRAD ? cig : cog;
  // Mode 3: the columns of the largest phase, for the grid; N and K per phase below.
  ivec3 most = (pc.isz + pc.str - 1) / pc.str;
  uint N = MODE == CONV_FORWARD   ? pc.n * ospat
           : MODE == CONV_DATA_GRAD ? pc.n * ispat
           : MODE == CONV_WEIGHT_GRAD ? cig * kvol
                       : pc.n * uint(most.x * most.y * most.z);
  uint K = MODE == CONV_FORWARD ? cig * kvol : MODE == CONV_DATA_GRAD ? cog * kvol : pc.n * ospat;
  uint wid = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint total = pc.co * cig * kvol;  // weight-grad outputs
  if ((pc.flags & CONV_SUM) != 0u) {
    uint idx = wid * WG + gl_LocalInvocationID.x;
    if (idx >= total) return;
    BufF32 parts = BufF32(pc.p0);
    float s = 0.0;
    for (uint sl = 0u; sl < pc.splits; ++sl) s += parts.v[sl * total + idx];
    STORE(pc.dst, idx, s);
    return;
  }
  uint mt = (M + TM - 1) / TM, nt = (N + TN - 1) / TN;
  uint per_slice = pc.groups * mt * nt;
  bool partial = (pc.flags & CONV_PARTIAL) != 0u;
  // A slice is a K slice (split-K) or a phase (mode 3).
  uint slices = partial ? pc.splits : MODE == CONV_PHASED_DATA_GRAD ? uint(pc.str.x * pc.str.y * pc.str.z) : 1u;
  if (wid >= per_slice * slices) return;  // uniform across the workgroup
  uint slice = wid / per_slice;
  wid -= slice * per_slice;
  if (MODE == CONV_PHASED_DATA_GRAD) {
    prepare_phase(slice);
    N = pc.n * uint(ph_cnt.x * ph_cnt.y * ph_cnt.z);
    K = cog * uint(ph_kc.x * ph_kc.y * ph_kc.z);
  }
  uint k_len = partial ? ((K + slices - 1u) / slices + TK - 1u) / TK * TK : K;
  uint k_begin = partial ? slice * k_len : 0u, k_end = min(K, k_begin + k_len);
  uint ntile = wid % nt, rest = wid / nt;
  uint mtile = rest % mt;
  g = rest / mt;
  uint m0 = mtile * TM, n0 = ntile * TN;
  if (n0 >= N) return;  // uniform: past this phase's columns
  uint tid = gl_LocalInvocationID.x, tx = tid % NT, ty = tid / NT;
  // ACCQ(i, q)[w]: row i, column 4 * q + w of this thread's TT x TT outputs (their
  // places in the tile: the stores below), one array of TT vec4s per column group, as in
  // gemm.comp (no register array over eight vec4s).
  vec4 acc0[TT], acc1[TT];
#define ACCQ(I, Q) ((Q) == 0u ? acc0[I] : acc1[I])
  [[unroll]] for (uint i = 0; i < TT; ++i) {
    acc0[i] = vec4(0.0);
    acc1[i] = vec4(0.0);
  }
  // B is loaded contiguous along columns (positions): this thread's column is fixed,
  // and its rows are tid / TN + r * WG / TN. A's column is k0 + tid % TK.
  uint nn = tid % TN, col = n0 + nn;
  if (col < N) prepare_column(col);
  const ivec3 b_sz = MODE == CONV_WEIGHT_GRAD ? pc.osz : MODE == CONV_PHASED_DATA_GRAD ? ph_kc : pc.ksz;
  const ivec3 a_sz = MODE == CONV_PHASED_DATA_GRAD ? ph_kc : ivec3(1, 1, MODE == CONV_WEIGHT_GRAD ? ospat : kvol);
  Digits b_row = split(k_begin + tid / TN, b_sz), b_next = split(WG / TN, b_sz);
  Digits b_step = split(TK, b_sz);
  Digits a_col = split(k_begin + tid % TK, a_sz), a_step = split(TK, a_sz);
  if (k_begin < k_end) {
    fetch(k_begin, k_end, m0, M, col, N, a_col, b_row, b_next, b_sz);
    stage(0u, nn);
    barrier();
  }
  uint st = 0u;  // the stage this step multiplies from
  for (uint k0 = k_begin; k0 < k_end; k0 += TK) {
    b_row = advance(b_row, b_step, b_sz);
    a_col = advance(a_col, a_step, a_sz);
    bool more = k0 + TK < k_end;  // uniform
    if (more) fetch(k0 + TK, k_end, m0, M, col, N, a_col, b_row, b_next, b_sz);
    [[unroll]] for (uint kk = 0; kk < TK; ++kk) {
      vec4 a[TQ], b[TQ];
      [[unroll]] for (uint q = 0; q < TQ; ++q) {
        a[q] = sA[st][kk][q * NT + ty];
        b[q] = sB[st][kk][q * NT + tx];
      }
      [[unroll]] for (uint i = 0; i < TT; ++i) {
        acc0[i] = fma(vec4(a[i / 4][i % 4]), b[0], acc0[i]);
        if (TQ > 1u) acc1[i] = fma(vec4(a[i / 4][i % 4]), b[TQ - 1u], acc1[i]);
      }
    }
    // The other stage was last read before the previous barrier: fill it now.
    if (more) stage(st ^ 1u, nn);
    barrier();
    st ^= 1u;
  }
  if (TT == 4u) {  // 4 x 4 outputs per thread: stored directly
    [[unroll]] for (uint i = 0; i < TT; ++i) {
      uint m = m0 + ty * 4 + i;
      if (m >= M) continue;
      [[unroll]] for (uint j = 0; j < TT; ++j) {
        uint col = n0 + tx * 4 + j;
        if (col < N) store_out(m, col, acc0[i][j], slice, partial, total);
      }
    }
    return;
  }
  // 8 x 8 outputs per thread leave through shared memory, a chunk of 4 NT rows by NT
  // quads at a time (one row group of every thread by one column group), as in gemm.comp:
  // the accumulators are read only by unrolled one-store loops, so they stay in registers
  // whatever the compiler makes of store_out's index arithmetic; and a warp's global
  // writes cover consecutive positions. The chunk's halves reuse sA and sB (each holds
  // one for the 128 tile's TK of 8), which the K loop's last barrier freed.
  [[unroll]] for (uint r = 0u; r < TQ; ++r) {
    [[unroll]] for (uint c = 0u; c < TQ; ++c) {
      [[unroll]] for (uint u = 0u; u < 4u; ++u) chunk_put((ty * 4u + u) * NT + tx, ACCQ(r * 4u + u, c));
      barrier();
      for (uint e = tid; e < 2u * CHUNK_HALF; e += WG) {
        vec4 v = chunk_get(e);
        uint m = m0 + r * 4u * NT + e / NT;
        uint col0 = n0 + (c * NT + e % NT) * 4u;
        if (m >= M) continue;
        [[unroll]] for (uint w = 0u; w < 4u; ++w) {
          if (col0 + w >= N) break;
          store_out(m, col0 + w, v[w], slice, partial, total);
        }
      }
      barrier();
    }
  }
}
