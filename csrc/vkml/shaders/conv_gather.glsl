// A convolution as an implicit GEMM, shared by conv_gemm.comp (fp32 arithmetic) and
// conv_coopmat.comp (matrix units): which tile of which GEMM a workgroup computes, the
// gathers of the operands' elements straight from the activations and weights (the
// im2col operand is never materialised) and the stores of the outputs. Per group g:
//   mode 0, forward:     y[n, m, o]  = sum_k w[m, k] * x~[k, (n, o)]     M = Co/g,  K = Ci/g*kvol
//   mode 1, data grad:   gx[n, m, i] = sum_k w~[m, k] * gy~[k, (n, i)]   M = Ci/g,  K = Co/g*kvol
//   mode 2, weight grad: gw[m, col]  = sum_k gy[m, k] * x~[k, col]       M = Co/g,  K = N*O
//   mode 3, data grad of a strided, undilated convolution, by phases: input positions
//     i with the same (i + pad) mod stride (a phase) receive gy only through kernel
//     positions with that residue, so each phase is its own GEMM over those alone
//     (mode 1 would multiply stride^d - 1 zeros for every product it needs). The
//     grid holds every phase's tiles; tiles past a phase's columns exit.
// Split-K (weight grad, whose K = N x positions is long while C is small): with
// CONV_PARTIAL the grid repeats the tiles once per K slice and each workgroup writes raw
// fp32 sums to scratch [splits][Co x Ci/g x kvol] at dst; conv_gemm.comp's CONV_SUM
// pass adds the slices in order (deterministic).
// The gathers' row indices advance as mixed-radix digits (Digits), so K loops need no
// integer division (strided data grads aside).
//
// The includer defines MODE (a specialization constant), GATHER_T (the type elements
// are gathered as), gather_ld(P, O) (element O of the buffer at P as GATHER_T) and
// GATHER_ZERO, and includes common.glsl, float_store.glsl and conv_push.h first.

ivec3 unflat(uint f, ivec3 sz) {
  return ivec3(f / uint(sz.y * sz.z), (f / uint(sz.z)) % uint(sz.y), f % uint(sz.z));
}
uint flat3(ivec3 c, ivec3 sz) { return uint((c.x * sz.y + c.y) * sz.z + c.z); }
bool inside(ivec3 c, ivec3 sz) {
  return all(greaterThanEqual(c, ivec3(0))) && all(lessThan(c, sz));
}

uint ispat, ospat, kvol, cig, cog, g;

void conv_sizes() {
  ispat = uint(pc.isz.x * pc.isz.y * pc.isz.z);
  ospat = uint(pc.osz.x * pc.osz.y * pc.osz.z);
  kvol = uint(pc.ksz.x * pc.ksz.y * pc.ksz.z);
  cig = pc.ci / pc.groups;
  cog = pc.co / pc.groups;
}

// A flat index as mixed-radix digits: the quotient q and a 3-D position p in a box of
// size sz. The K loops step their row indices by adding digits with carries, so the
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

// The tile a workgroup computes: rows [m0, m0 + TM) and columns [n0, n0 + TN) of C,
// over K rows [k_begin, k_end); `slice` is its K slice (split-K) or phase (mode 3).
struct ConvTile {
  uint M, N, K, m0, n0, k_begin, k_end, slice;
  bool partial;
};

// Workgroup wid's tile, for tiles of TM x TN in K steps of TK (the slices are whole
// steps); false where it has none (uniform across the workgroup). Call conv_sizes()
// first; sets g and, in mode 3, the phase.
bool conv_tile(uint wid, uint TM, uint TN, uint TK, out ConvTile t) {
  t.M = MODE == CONV_DATA_GRAD || MODE == CONV_PHASED_DATA_GRAD ? cig : cog;
  // Mode 3: the columns of the largest phase, for the grid; N and K per phase below.
  ivec3 most = (pc.isz + pc.str - 1) / pc.str;
  t.N = MODE == CONV_FORWARD       ? pc.n * ospat
        : MODE == CONV_DATA_GRAD   ? pc.n * ispat
        : MODE == CONV_WEIGHT_GRAD ? cig * kvol
                                   : pc.n * uint(most.x * most.y * most.z);
  t.K = MODE == CONV_FORWARD ? cig * kvol : MODE == CONV_DATA_GRAD ? cog * kvol : pc.n * ospat;
  uint mt = (t.M + TM - 1) / TM, nt = (t.N + TN - 1) / TN;
  uint per_slice = pc.groups * mt * nt;
  t.partial = (pc.flags & CONV_PARTIAL) != 0u;
  uint slices = t.partial                        ? pc.splits
                : MODE == CONV_PHASED_DATA_GRAD ? uint(pc.str.x * pc.str.y * pc.str.z)
                                                : 1u;
  if (wid >= per_slice * slices) return false;
  t.slice = wid / per_slice;
  wid -= t.slice * per_slice;
  if (MODE == CONV_PHASED_DATA_GRAD) {
    prepare_phase(t.slice);
    t.N = pc.n * uint(ph_cnt.x * ph_cnt.y * ph_cnt.z);
    t.K = cog * uint(ph_kc.x * ph_kc.y * ph_kc.z);
  }
  uint k_len = t.partial ? ((t.K + slices - 1u) / slices + TK - 1u) / TK * TK : t.K;
  t.k_begin = t.partial ? t.slice * k_len : 0u;
  t.k_end = min(t.K, t.k_begin + k_len);
  uint ntile = wid % nt, rest = wid / nt;
  g = rest / mt;
  t.m0 = rest % mt * TM;
  t.n0 = ntile * TN;
  return t.n0 < t.N;  // past this phase's columns
}

// The boxes of the digits that A's and B's K indices are written in (load_a, load_b).
ivec3 a_digits_box() {
  return MODE == CONV_PHASED_DATA_GRAD ? ph_kc
                                       : ivec3(1, 1, MODE == CONV_WEIGHT_GRAD ? ospat : kvol);
}
ivec3 b_digits_box() {
  return MODE == CONV_WEIGHT_GRAD ? pc.osz : MODE == CONV_PHASED_DATA_GRAD ? ph_kc : pc.ksz;
}

// A's element (m, k); kd: k as digits over a_digits_box() (unused in mode 0).
GATHER_T load_a(uint m, uint k, Digits kd) {
  if (MODE == CONV_FORWARD) return gather_ld(pc.p1, ((g * cog + m) * cig) * kvol + k);
  if (MODE == CONV_DATA_GRAD)
    return gather_ld(pc.p1, ((g * cog + kd.q) * cig + m) * kvol + uint(kd.p.z));
  if (MODE == CONV_PHASED_DATA_GRAD)
    return gather_ld(pc.p1, ((g * cog + kd.q) * cig + m) * kvol + flat3(ph + kd.p * pc.str, pc.ksz));
  return gather_ld(pc.p1, (kd.q * pc.co + g * cog + m) * ospat + uint(kd.p.z));
}

// The kernels give each thread one column of B for the whole K loop, so the part of its
// gather that depends on the column alone is worked out once: c_pos and c_off per
// mode, below; load_b then adds what the row k contributes.
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

// B's row k, as digits over b_digits_box(): (channel, kernel position) in modes 0 and
// 1, (image, output position) in mode 2, (channel, kernel digits) in mode 3.
GATHER_T load_b(Digits k) {
  if (MODE == CONV_PHASED_DATA_GRAD) {
    ivec3 o = c_pos - k.p;
    if (any(lessThan(o, ivec3(0))) || any(greaterThanEqual(o, pc.osz))) return GATHER_ZERO;
    return gather_ld(pc.p0, c_off + k.q * ospat + flat3(o, pc.osz));
  }
  if (MODE == CONV_FORWARD) {
    ivec3 i = c_pos + k.p * pc.dil;
    if (!inside(i, pc.isz)) return GATHER_ZERO;
    return gather_ld(pc.p0, c_off + k.q * ispat + flat3(i, pc.isz));
  }
  if (MODE == CONV_WEIGHT_GRAD) {
    ivec3 i = k.p * pc.str + c_pos;
    if (!inside(i, pc.isz)) return GATHER_ZERO;
    return gather_ld(pc.p0, k.q * pc.ci * ispat + c_off + flat3(i, pc.isz));
  }
  // gy~: the output position that input position t reaches through kernel position k.p.
  ivec3 o = c_pos - k.p * pc.dil;
  if (any(lessThan(o, ivec3(0)))) return GATHER_ZERO;
  if (any(greaterThan(pc.str, ivec3(1)))) {  // uniform: strided convolutions only divide
    if (any(notEqual(o % pc.str, ivec3(0)))) return GATHER_ZERO;
    o /= pc.str;
  }
  if (any(greaterThanEqual(o, pc.osz))) return GATHER_ZERO;
  return gather_ld(pc.p0, c_off + k.q * ospat + flat3(o, pc.osz));
}

// Output (m, col) of tile t's GEMM, with its bias, to its place in y, gx or gw (or the
// split-K partials).
void store_out(ConvTile t, uint m, uint col, float v) {
  if (MODE == CONV_FORWARD) {
    uint c = g * cog + m, nn = col / ospat;
    float b = pc.p2 != 0 ? LD(pc.p2, c) : 0.0;
    STORE(pc.dst, (nn * pc.co + c) * ospat + col % ospat, v + b);
  } else if (MODE == CONV_DATA_GRAD) {
    uint c = g * cig + m, nn = col / ispat;
    float b = pc.p2 != 0 ? LD(pc.p2, c) : 0.0;
    STORE(pc.dst, (nn * pc.ci + c) * ispat + col % ispat, v + b);
  } else if (MODE == CONV_PHASED_DATA_GRAD) {
    uint c = g * cig + m;
    Digits d = split(col, ph_cnt);
    float b = pc.p2 != 0 ? LD(pc.p2, c) : 0.0;
    STORE(pc.dst, (d.q * pc.ci + c) * ispat + flat3(ph_f + d.p * pc.str, pc.isz), v + b);
  } else if (t.partial) {
    uint total = pc.co * cig * kvol;
    BufF32(pc.dst).v[t.slice * total + (g * cog + m) * cig * kvol + col] = v;
  } else {
    STORE(pc.dst, (g * cog + m) * cig * kvol + col, v);
  }
}
