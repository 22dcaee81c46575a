#version 450
// Symmetric eigendecomposition and SVD of matrices past the Jacobi kernels' orders
// (linalg.comp), through LAPACK's condensed forms; one workgroup per matrix.
// - EIGH_TRIDIAGONAL: Householder reduction to a tridiagonal T = Q^T A Q (sytd2, from
//   the lower triangle), T's eigenvalues by implicit-shift QL steps (steqr's method),
//   the eigenvectors Q times the steps' rotations.
// - SVD_BIDIAGONAL (m >= n): Householder reduction to an upper bidiagonal B = Q^T A P
//   (gebd2), B's singular values by Golub-Kahan implicit-shift QR steps (bdsqr's
//   method, without its zero-shift variant), U = Q and V = P times the steps' rotations.
// Barriers stay O(n): a few per column in the reductions, two per QR step. The O(n^3)
// work on the vectors needs none: a thread owns whole columns while it applies the
// reflectors, and whole rows while it applies a step's rotations, which thread 0
// computes and records in the scratch. The vectors are kept transposed while they are
// rotated (a row of them is strided across threads, so their accesses coalesce).
// The matrix is first scaled by a power of two to a largest magnitude in [1/2, 1)
// (exact; the values are scaled back), so that no square overflows or vanishes.
//! dtypes f32 f64
#include "common.glsl"
#include "linalg_push.h"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int ALGO = LINALG_EIGH_TRIDIAGONAL;
layout(constant_id = 1) const uint WG = 256;

#include "linalg_common.glsl"

const uint PARTS = 16u;  // partial sums per reduction: 2 barriers, 16-term sums
const uint ROTATE_U = 0u, ROTATE_V = 1u;
const uint RECORD = 5u;  // a rotation: c, s, p, q, which vectors

shared REAL s_value[WG];
shared REAL s_part[PARTS];
// Thread 0's QR iteration, kept between its steps.
shared uint s_count;  // rotations recorded by the latest step
shared uint s_done;   // every value converged (or info says why not)
shared uint s_next;   // EIGH: the first eigenvalue not yet converged
shared uint s_steps;  // steps taken (EIGH: on the current eigenvalue)
shared REAL s_norm;   // SVD: the largest magnitude in B

// Every thread's x summed (or their maximum), the same value for all.
REAL group_reduce(REAL x, bool maximum) {
  const uint t = gl_LocalInvocationID.x;
  s_value[t] = x;
  barrier();
  if (t < PARTS) {
    REAL y = s_value[t];
    for (uint i = t + PARTS; i < WG; i += PARTS) y = maximum ? max(y, s_value[i]) : y + s_value[i];
    s_part[t] = y;
  }
  barrier();
  // No barrier after: the next call writes s_part only after its first one.
  REAL r = s_part[0];
  for (uint i = 1u; i < PARTS; ++i) r = maximum ? max(r, s_part[i]) : r + s_part[i];
  return r;
}

REAL hyp(REAL x, REAL y) {
  x = abs(x);
  y = abs(y);
  const REAL big = max(x, y), small = min(x, y);
  if (big == REAL(0)) return REAL(0);
  const REAL r = small / big;
  return big * sqrt(REAL(1) + r * r);
}

// LAPACK's larfg for x = (alpha, tail), |tail|^2 = tail2: H = I - tau v v^T with
// v = (1, tail * scale) takes x to (beta, 0). tau = 0 (H = I) where the tail is zero.
void householder(REAL alpha, REAL tail2, out REAL beta, out REAL tau, out REAL scale) {
  if (tail2 == REAL(0)) {
    beta = alpha;
    tau = REAL(0);
    scale = REAL(0);
    return;
  }
  beta = sqrt(alpha * alpha + tail2);
  if (alpha >= REAL(0)) beta = -beta;
  tau = (beta - alpha) / beta;
  scale = REAL(1) / (alpha - beta);
}

// Flags non-finite input, then scales the rows x cols matrix by 2^-ex to a largest
// magnitude in [1/2, 1) (ex = 0 for a zero matrix); `symmetric` reads the lower
// triangle and mirrors it. False, with nothing done, where the input is not finite.
bool normalize(BufR a, uint rows, uint cols, uint mat, int code, bool symmetric, out int ex) {
  const uint t = gl_LocalInvocationID.x, count = rows * cols;
  REAL big = REAL(0);
  for (uint q = t; q < count; q += WG) {
    if (symmetric && q % cols > q / cols) continue;
    const REAL x = a.v[q];
    flag_non_finite(x, mat, code);
    big = max(big, abs(x));
  }
  memoryBarrierBuffer();  // the flags, seen after the reduction's barriers
  big = group_reduce(big, true);
  if (CohI32(pc.info).v[mat] != 0) return false;
  frexp(big, ex);
  for (uint q = t; q < count; q += WG)
    if (!symmetric || q % cols <= q / cols) a.v[q] = ldexp(a.v[q], -ex);
  sync();
  if (symmetric) {
    for (uint q = t; q < count; q += WG)
      if (q % cols > q / cols) a.v[q] = a.v[(q % cols) * cols + q / cols];
    sync();
  }
  return true;
}

// Thread 0: appends a rotation of columns p, q of U or V:
// (x_p, x_q) <- (c x_p - s x_q, s x_p + c x_q).
void record(BufR rec, REAL c, REAL s, uint p, uint q, uint which) {
  const uint at = RECORD * s_count++;
  rec.v[at] = c;
  rec.v[at + 1u] = s;
  rec.v[at + 2u] = REAL(p);
  rec.v[at + 3u] = REAL(q);
  rec.v[at + 4u] = REAL(which);
}

// Every thread: the latest step's rotations of `which`, on the rows it owns of vectors
// held transposed (column j of them at xt[j * rows]).
void rotate(BufR xt, uint rows, BufR rec, uint which) {
  const uint count = s_count;
  for (uint r = gl_LocalInvocationID.x; r < rows; r += WG) {
    for (uint k = 0u; k < count; ++k) {
      const uint at = RECORD * k;
      if (uint(rec.v[at + 4u]) != which) continue;
      const REAL c = rec.v[at], s = rec.v[at + 1u];
      const uint p = uint(rec.v[at + 2u]) * rows + r, q = uint(rec.v[at + 3u]) * rows + r;
      const REAL xp = xt.v[p], xq = xt.v[q];
      xt.v[p] = c * xp - s * xq;
      xt.v[q] = s * xp + c * xq;
    }
  }
}

// order[place] = j for values key[j] ascending (descending), ties by index.
void rank_order(BufR key, uint n, bool descending, bool magnitude, CohI32 order) {
  for (uint j = gl_LocalInvocationID.x; j < n; j += WG) {
    const REAL x = magnitude ? abs(key.v[j]) : key.v[j];
    uint place = 0u;
    for (uint i = 0u; i < n; ++i) {
      const REAL y = magnitude ? abs(key.v[i]) : key.v[i];
      if ((descending ? y > x : y < x) || (y == x && i < j)) ++place;
    }
    order.v[place] = int(j);
  }
  sync();
}

// Where order[j] came from (clamped: a failed iteration's NaNs leave places unset).
uint source(CohI32 order, uint j, uint n) { return min(uint(order.v[j]), n - 1u); }

// ---- EIGH_TRIDIAGONAL -------------------------------------------------------------------

// Thread 0: the next implicit QL step on the tridiagonal (diagonal d, e[i] between i
// and i + 1), its rotations recorded; s_done once all converged (or 30 steps on one
// eigenvalue did not: info 1, as syevd's).
void ql_step(BufR d, BufR e, BufR rec, uint n, uint mat) {
  s_count = 0u;
  uint l = s_next;
  while (l < n) {
    uint m = l;
    while (m + 1u < n && abs(e.v[m]) > EPS * (abs(d.v[m]) + abs(d.v[m + 1u]))) ++m;
    if (m == l) {
      ++l;
      s_steps = 0u;
      continue;
    }
    if (++s_steps > 30u) {
      CohI32(pc.info).v[mat] = 1;
      l = n;
      break;
    }
    // The shift: the eigenvalue of the leading 2 x 2 nearer d[l].
    REAL g = (d.v[l + 1u] - d.v[l]) / (REAL(2) * e.v[l]);
    REAL r = hyp(g, REAL(1));
    g = d.v[m] - d.v[l] + e.v[l] / (g + (g >= REAL(0) ? r : -r));
    REAL s = REAL(1), c = REAL(1), p = REAL(0);
    bool split = false;
    for (uint i = m; i-- > l;) {
      const REAL f = s * e.v[i], b = c * e.v[i];
      r = hyp(f, g);
      e.v[i + 1u] = r;
      if (r == REAL(0)) {  // T splits exactly here: the step ends
        d.v[i + 1u] -= p;
        e.v[m] = REAL(0);
        split = true;
        break;
      }
      s = f / r;
      c = g / r;
      g = d.v[i + 1u] - p;
      r = (d.v[i] - g) * s + REAL(2) * c * b;
      p = s * r;
      d.v[i + 1u] = g + p;
      g = c * r - b;
      record(rec, c, s, i, i + 1u, ROTATE_V);
    }
    if (!split) {
      d.v[l] -= p;
      e.v[l] = g;
      e.v[m] = REAL(0);
    }
    break;
  }
  s_next = l;
  s_done = l >= n ? 1u : 0u;
}

void eigh_tridiagonal(uint mat) {
  const uint n = pc.n, t = gl_LocalInvocationID.x;
  const bool vectors = (pc.flags & LINALG_VALUES_ONLY) == 0u;
  BufR a = matrix(pc.a, mat, n, n), w = matrix(pc.b, mat, 1u, n), z = matrix(pc.c, mat, n, n);
  const uint64_t base = pc.scratch + uint64_t(mat) * LINALG_CONDENSED_SCRATCH * n * RSIZE;
  BufR d = BufR(base), e = BufR(base + n * RSIZE), tau = BufR(base + 2u * n * RSIZE);
  BufR p = BufR(base + 3u * n * RSIZE), rec = BufR(base + 4u * n * RSIZE);
  CohI32 order = CohI32(base + (4u + RECORD) * n * RSIZE);
  int ex;
  if (!normalize(a, n, n, mat, 1, true, ex)) return;

  // Column k's reflector H_k (v_k in column k from row k + 1, v_k[k + 1] = 1), applied
  // on both sides of the trailing A22: A22 - v w^T - w v^T, w = p - tau/2 (p.v) v, p = tau A22 v.
  for (uint k = 0u; k + 2u < n; ++k) {
    const uint r0 = k + 1u;
    const REAL alpha = a.v[r0 * n + k];
    REAL part = REAL(0);
    for (uint i = r0 + 1u + t; i < n; i += WG) part += a.v[i * n + k] * a.v[i * n + k];
    REAL beta, tk, scale;
    householder(alpha, group_reduce(part, false), beta, tk, scale);
    for (uint i = r0 + 1u + t; i < n; i += WG) a.v[i * n + k] *= scale;
    if (t == 0u) {
      a.v[r0 * n + k] = REAL(1);
      d.v[k] = a.v[k * n + k];
      e.v[k] = beta;
      tau.v[k] = tk;
    }
    sync();
    if (tk == REAL(0)) continue;
    REAL pv = REAL(0);
    for (uint i = r0 + t; i < n; i += WG) {
      REAL s = REAL(0);
      for (uint j = r0; j < n; ++j) s += a.v[j * n + i] * a.v[j * n + k];  // A22 symmetric
      s *= tk;
      p.v[i] = s;
      pv += s * a.v[i * n + k];
    }
    const REAL corr = REAL(-0.5) * tk * group_reduce(pv, false);
    for (uint i = r0 + t; i < n; i += WG) p.v[i] += corr * a.v[i * n + k];
    sync();
    const uint rest = n - r0;
    for (uint q = t; q < rest * rest; q += WG) {
      const uint i = r0 + q / rest, j = r0 + q % rest;
      a.v[i * n + j] -= a.v[i * n + k] * p.v[j] + p.v[i] * a.v[j * n + k];
    }
    sync();
  }
  if (t == 0u) {
    if (n >= 2u) {
      d.v[n - 2u] = a.v[(n - 2u) * n + n - 2u];
      e.v[n - 2u] = a.v[(n - 1u) * n + n - 2u];
    }
    d.v[n - 1u] = a.v[(n - 1u) * n + n - 1u];
    e.v[n - 1u] = REAL(0);
    s_next = 0u;
    s_steps = 0u;
  }
  // Q = H_0 ... H_{n-3}, column j by column j (H_k leaves e_j alone for k >= j).
  if (vectors) {
    for (uint j = t; j < n; j += WG) {
      for (uint i = 0u; i < n; ++i) z.v[j * n + i] = i == j ? REAL(1) : REAL(0);
      for (uint k = min(j, n - 2u); k-- > 0u;) {
        REAL s = REAL(0);
        for (uint i = k + 1u; i < n; ++i) s += a.v[i * n + k] * z.v[j * n + i];
        s *= tau.v[k];
        for (uint i = k + 1u; i < n; ++i) z.v[j * n + i] -= s * a.v[i * n + k];
      }
    }
  }
  sync();
  for (;;) {
    if (t == 0u) ql_step(d, e, rec, n, mat);
    sync();
    if (s_done != 0u) break;
    if (vectors) rotate(z, n, rec, ROTATE_V);
    sync();  // the rotations read before thread 0 records the next
  }

  rank_order(d, n, false, false, order);
  for (uint j = t; j < n; j += WG) w.v[j] = ldexp(d.v[source(order, j, n)], ex);
  if (!vectors) return;
  for (uint q = t; q < n * n; q += WG) a.v[q] = z.v[source(order, q % n, n) * n + q / n];
  sync();
  for (uint q = t; q < n * n; q += WG) z.v[q] = a.v[q];
}

// ---- SVD_BIDIAGONAL ---------------------------------------------------------------------

// Thread 0: a zero at d[i], i < hi: row i's e[i] chased right, out of the block, by
// rotations of rows (j, i).
void chase_row(BufR d, BufR e, BufR rec, uint i, uint hi) {
  REAL f = e.v[i];
  e.v[i] = REAL(0);
  for (uint j = i + 1u; j <= hi && f != REAL(0); ++j) {
    const REAL r = hyp(d.v[j], f), c = d.v[j] / r, s = -f / r;
    d.v[j] = r;
    record(rec, c, s, j, i, ROTATE_U);
    if (j < hi) {
      f = s * e.v[j];
      e.v[j] *= c;
    }
  }
}

// Thread 0: a zero at d[hi]: the last column's e[hi - 1] chased up, out of the block,
// by rotations of columns (j, hi).
void chase_column(BufR d, BufR e, BufR rec, uint lo, uint hi) {
  REAL f = e.v[hi - 1u];
  e.v[hi - 1u] = REAL(0);
  for (uint j = hi; j-- > lo && f != REAL(0);) {
    const REAL r = hyp(d.v[j], f), c = d.v[j] / r, s = -f / r;
    d.v[j] = r;
    record(rec, c, s, j, hi, ROTATE_V);
    if (j > lo) {
      f = s * e.v[j - 1u];
      e.v[j - 1u] *= c;
    }
  }
}

// Thread 0: a Golub-Kahan step on the block [lo, hi], with the Wilkinson shift from
// B^T B's trailing 2 x 2: columns (k, k + 1) rotated to zero the bulge above (at k = lo:
// B^T B - mu I's first column), then rows (k, k + 1) to zero the bulge below.
void golub_kahan(BufR d, BufR e, BufR rec, uint lo, uint hi) {
  const REAL dm = d.v[hi - 1u], dn = d.v[hi], em = e.v[hi - 1u];
  const REAL el = hi - 1u > lo ? e.v[hi - 2u] : REAL(0);
  const REAL t00 = dm * dm + el * el, t01 = dm * em, t11 = dn * dn + em * em;
  const REAL gap = REAL(0.5) * (t00 - t11);
  REAL mu = t11;
  if (t01 != REAL(0))
    mu -= t01 * t01 / (gap + (gap >= REAL(0) ? REAL(1) : REAL(-1)) * hyp(gap, t01));
  REAL y = d.v[lo] * d.v[lo] - mu, z = d.v[lo] * e.v[lo];
  for (uint k = lo; k < hi; ++k) {
    REAL r = hyp(y, z);
    REAL c = r == REAL(0) ? REAL(1) : y / r, s = r == REAL(0) ? REAL(0) : -z / r;
    if (k > lo) e.v[k - 1u] = r;
    const REAL dk = d.v[k], ek = e.v[k], dk1 = d.v[k + 1u];
    d.v[k] = c * dk - s * ek;
    e.v[k] = s * dk + c * ek;
    const REAL below = -s * dk1;
    d.v[k + 1u] = c * dk1;
    record(rec, c, s, k, k + 1u, ROTATE_V);
    y = d.v[k];
    z = below;
    r = hyp(y, z);
    c = r == REAL(0) ? REAL(1) : y / r;
    s = r == REAL(0) ? REAL(0) : -z / r;
    d.v[k] = r;
    const REAL ek2 = e.v[k], dk2 = d.v[k + 1u];
    e.v[k] = c * ek2 - s * dk2;
    d.v[k + 1u] = s * ek2 + c * dk2;
    record(rec, c, s, k, k + 1u, ROTATE_U);
    if (k + 1u < hi) {
      const REAL next = e.v[k + 1u];
      y = e.v[k];
      z = -s * next;
      e.v[k + 1u] = c * next;
    }
  }
}

// Thread 0: the next step on the upper bidiagonal (diagonal d, e[i] at (i, i + 1)), on
// its last unreduced block, its rotations recorded: a zero on the diagonal chased out,
// else a Golub-Kahan step. s_done once B is diagonal (or after 40 n steps: info 1).
void svd_step(BufR d, BufR e, BufR rec, uint n, uint mat) {
  s_count = 0u;
  s_done = 0u;
  for (uint i = 0u; i + 1u < n; ++i)
    if (abs(e.v[i]) <= EPS * (abs(d.v[i]) + abs(d.v[i + 1u]))) e.v[i] = REAL(0);
  uint hi = n - 1u;
  while (hi > 0u && e.v[hi - 1u] == REAL(0)) --hi;
  if (hi == 0u) {
    s_done = 1u;
  } else if (++s_steps > 40u * n) {
    CohI32(pc.info).v[mat] = 1;
    s_done = 1u;
  } else {
    uint lo = hi - 1u;
    while (lo > 0u && e.v[lo - 1u] != REAL(0)) --lo;
    uint zero = hi + 1u;
    for (uint i = lo; i <= hi && zero > hi; ++i)
      if (abs(d.v[i]) <= EPS * s_norm) zero = i;
    if (zero <= hi) d.v[zero] = REAL(0);
    if (zero < hi) chase_row(d, e, rec, zero, hi);
    else if (zero == hi) chase_column(d, e, rec, lo, hi);
    else golub_kahan(d, e, rec, lo, hi);
  }
}

void svd_bidiagonal(uint mat) {
  const uint m = pc.m, n = pc.n, t = gl_LocalInvocationID.x;
  const bool vectors = (pc.flags & LINALG_VALUES_ONLY) == 0u;
  BufR a = matrix(pc.a, mat, m, n), sv = matrix(pc.b, mat, 1u, n);
  BufR v = matrix(pc.c, mat, n, n), u = matrix(pc.d, mat, m, n);
  const uint64_t base = pc.scratch + uint64_t(mat) * LINALG_CONDENSED_SCRATCH * n * RSIZE;
  BufR d = BufR(base), e = BufR(base + n * RSIZE), tauq = BufR(base + 2u * n * RSIZE);
  BufR taup = BufR(base + 3u * n * RSIZE), rec = BufR(base + 4u * n * RSIZE);
  CohI32 order = CohI32(base + (4u + 2u * RECORD) * n * RSIZE);
  int ex;
  if (!normalize(a, m, n, mat, -4, false, ex)) return;

  // Column k's reflector from the left (v in column k from row k, v[k] = 1), then row
  // k's from the right (v in row k from column k + 1, v[k + 1] = 1); each applied by
  // threads owning whole columns (rows) of the rest.
  for (uint k = 0u; k < n; ++k) {
    REAL alpha = a.v[k * n + k];
    REAL part = REAL(0);
    for (uint i = k + 1u + t; i < m; i += WG) part += a.v[i * n + k] * a.v[i * n + k];
    REAL beta, tk, scale;
    householder(alpha, group_reduce(part, false), beta, tk, scale);
    for (uint i = k + 1u + t; i < m; i += WG) a.v[i * n + k] *= scale;
    if (t == 0u) {
      a.v[k * n + k] = REAL(1);
      d.v[k] = beta;
      tauq.v[k] = tk;
    }
    sync();
    if (tk != REAL(0)) {
      for (uint j = k + 1u + t; j < n; j += WG) {
        REAL s = REAL(0);
        for (uint i = k; i < m; ++i) s += a.v[i * n + k] * a.v[i * n + j];
        s *= tk;
        for (uint i = k; i < m; ++i) a.v[i * n + j] -= s * a.v[i * n + k];
      }
      sync();
    }
    if (k + 1u == n) break;
    alpha = a.v[k * n + k + 1u];
    part = REAL(0);
    for (uint j = k + 2u + t; j < n; j += WG) part += a.v[k * n + j] * a.v[k * n + j];
    householder(alpha, group_reduce(part, false), beta, tk, scale);
    for (uint j = k + 2u + t; j < n; j += WG) a.v[k * n + j] *= scale;
    if (t == 0u) {
      a.v[k * n + k + 1u] = REAL(1);
      e.v[k] = beta;
      taup.v[k] = tk;
    }
    sync();
    if (tk != REAL(0)) {
      for (uint i = k + 1u + t; i < m; i += WG) {
        REAL s = REAL(0);
        for (uint j = k + 1u; j < n; ++j) s += a.v[i * n + j] * a.v[k * n + j];
        s *= tk;
        for (uint j = k + 1u; j < n; ++j) a.v[i * n + j] -= s * a.v[k * n + j];
      }
      sync();
    }
  }
  if (t == 0u) {
    e.v[n - 1u] = REAL(0);
    REAL big = REAL(0);
    for (uint i = 0u; i < n; ++i) big = max(big, max(abs(d.v[i]), abs(e.v[i])));
    s_norm = big;
    s_steps = 0u;
  }
  // U = Q's first n columns, Q = H_0 ... H_{n-1} (H_k leaves e_j alone for k > j), and
  // V = P = G_0 ... G_{n-3} (G_k acts from coordinate k + 1: leaves e_j for k >= j).
  if (vectors) {
    for (uint j = t; j < n; j += WG) {
      for (uint i = 0u; i < m; ++i) u.v[j * m + i] = i == j ? REAL(1) : REAL(0);
      for (uint k = j + 1u; k-- > 0u;) {
        REAL s = REAL(0);
        for (uint i = k; i < m; ++i) s += a.v[i * n + k] * u.v[j * m + i];
        s *= tauq.v[k];
        for (uint i = k; i < m; ++i) u.v[j * m + i] -= s * a.v[i * n + k];
      }
      for (uint i = 0u; i < n; ++i) v.v[j * n + i] = i == j ? REAL(1) : REAL(0);
      for (uint k = j; k-- > 0u;) {
        REAL s = REAL(0);
        for (uint i = k + 1u; i < n; ++i) s += a.v[k * n + i] * v.v[j * n + i];
        s *= taup.v[k];
        for (uint i = k + 1u; i < n; ++i) v.v[j * n + i] -= s * a.v[k * n + i];
      }
    }
  }
  sync();
  for (;;) {
    if (t == 0u) svd_step(d, e, rec, n, mat);
    sync();
    if (s_done != 0u) break;
    if (vectors) {
      rotate(u, m, rec, ROTATE_U);
      rotate(v, n, rec, ROTATE_V);
    }
    sync();  // the rotations read before thread 0 records the next
  }

  // Singular values |d| descending; a negative d's sign goes into its V column.
  rank_order(d, n, true, true, order);
  for (uint j = t; j < n; j += WG) sv.v[j] = ldexp(abs(d.v[source(order, j, n)]), ex);
  if (!vectors) return;
  for (uint q = t; q < m * n; q += WG) a.v[q] = u.v[source(order, q % n, n) * m + q / n];
  sync();
  for (uint q = t; q < m * n; q += WG) u.v[q] = a.v[q];
  sync();
  for (uint q = t; q < n * n; q += WG) {
    const uint j = source(order, q % n, n);
    a.v[q] = d.v[j] < REAL(0) ? -v.v[j * n + q / n] : v.v[j * n + q / n];
  }
  sync();
  for (uint q = t; q < n * n; q += WG) v.v[q] = a.v[q];
}

void main() {
  const uint mat = group_id();
  if (mat >= pc.batch) return;
  if (ALGO == LINALG_EIGH_TRIDIAGONAL) eigh_tridiagonal(mat);
  else svd_bidiagonal(mat);
}
