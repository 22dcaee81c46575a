#version 450
// Complex counterparts of linalg.comp's kernels (vkml/ops/linalg.h, LinalgArgs::complex):
// LU, LU_SOLVE, TRSM, GEQRF, ORGQR, EIGH and SVD of matrices of complex numbers, each an
// (re, im) pair of the variant's real type, row-major and contiguous. The algorithm is
// specialization constant 0 (LINALG_* of linalg_push.h), with linalg.comp's operands;
// eigenvalues and singular values are reals.
//
// Where LAPACK leaves a choice, its complex routines' is taken so results match the
// CPU's: LU pivots on the largest |re| + |im| (icamax), Householder reflectors keep beta
// real with a complex tau (clarfg), and geqrf applies H^H. The Jacobi rotations first
// turn the pair's coupling real by a phase on column q, then rotate as the real kernels.
//! dtypes f32 f64
#include "common.glsl"
#include "linalg_push.h"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int ALGO = LINALG_LU;
layout(constant_id = 1) const uint WG = 256;

#include "linalg_common.glsl"

#if defined(ST_F64)
#define CPLX dvec2
layout(buffer_reference, scalar, buffer_reference_align = 8) coherent buffer BufC { dvec2 v[]; };
#else
#define CPLX vec2
layout(buffer_reference, scalar, buffer_reference_align = 8) coherent buffer BufC { vec2 v[]; };
#endif

shared REAL s_best[WG];
shared REAL s_sum1[WG];
shared REAL s_sum2[WG];
shared REAL s_sum3[WG];
shared uint s_where[WG];
shared REAL s_cos, s_sin;
shared CPLX s_phase;
shared int s_rotate, s_rotated;

BufC cmatrix(uint64_t base, uint mat, uint rows, uint cols) {
  return BufC(base + uint64_t(mat) * rows * cols * (2u * RSIZE));
}

CPLX cmul(CPLX a, CPLX b) { return CPLX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
CPLX conjg(CPLX a) { return CPLX(a.x, -a.y); }
REAL abs1(CPLX a) { return abs(a.x) + abs(a.y); }
REAL cnorm2(CPLX a) { return a.x * a.x + a.y * a.y; }
// a / b by Smith's scaling, so that |b|^2 is never formed (it under- or overflows first).
CPLX cdiv(CPLX a, CPLX b) {
  if (abs(b.x) >= abs(b.y)) {
    const REAL r = b.y / b.x, d = b.x + b.y * r;
    return CPLX((a.x + a.y * r) / d, (a.y - a.x * r) / d);
  }
  const REAL r = b.x / b.y, d = b.x * r + b.y;
  return CPLX((a.x * r + a.y) / d, (a.y * r - a.x) / d);
}

void reduce_best() {
  const uint t = gl_LocalInvocationID.x;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (t < s) s_best[t] += s_best[t + s];
    barrier();
  }
}

void lu(uint mat) {
  const uint m = pc.m, n = pc.n, t = gl_LocalInvocationID.x;
  const uint steps = min(m, n);
  BufC a = cmatrix(pc.a, mat, m, n);
  for (uint j = 0u; j < steps; ++j) {
    // The pivot: the first row of the largest |re| + |im| in column j, rows j..m-1.
    REAL best = REAL(-1);
    uint where = j;
    for (uint i = j + t; i < m; i += WG) {
      const REAL v = abs1(a.v[i * n + j]);
      if (v > best) {
        best = v;
        where = i;
      }
    }
    s_best[t] = best;
    s_where[t] = where;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
      if (t < s) {
        const REAL o = s_best[t + s];
        const uint ow = s_where[t + s];
        if (o > s_best[t] || (o == s_best[t] && ow < s_where[t])) {
          s_best[t] = o;
          s_where[t] = ow;
        }
      }
      barrier();
    }
    const uint p = s_where[0];
    const REAL pivot_abs = s_best[0];
    if (t == 0u) {
      CohI32(pc.pivots).v[mat * steps + j] = int(p + 1u);
      if (pivot_abs == REAL(0) && CohI32(pc.info).v[mat] == 0) CohI32(pc.info).v[mat] = int(j + 1u);
    }
    if (p != j) {
      for (uint c = t; c < n; c += WG) {
        const CPLX x = a.v[j * n + c];
        a.v[j * n + c] = a.v[p * n + c];
        a.v[p * n + c] = x;
      }
    }
    sync();
    const CPLX d = a.v[j * n + j];
    if (d != CPLX(0)) {
      for (uint i = j + 1u + t; i < m; i += WG) a.v[i * n + j] = cdiv(a.v[i * n + j], d);
    }
    sync();
    const uint rows = m - j - 1u, cols = n - j - 1u;
    for (uint e = t; e < rows * cols; e += WG) {
      const uint i = j + 1u + e / cols, c = j + 1u + e % cols;
      a.v[i * n + c] -= cmul(a.v[i * n + j], a.v[j * n + c]);
    }
    sync();
  }
}

// H = I - tau v v^H applied from the left to columns j+1.. of a (v: column j from row j,
// v[j] = 1): column c -= tau v (v^H c), one column per thread.
void apply_reflector(BufC a, uint m, uint n, uint j, CPLX tau) {
  for (uint c = j + 1u + gl_LocalInvocationID.x; c < n; c += WG) {
    CPLX w = a.v[j * n + c];
    for (uint i = j + 1u; i < m; ++i) w += cmul(conjg(a.v[i * n + j]), a.v[i * n + c]);
    w = cmul(w, tau);
    a.v[j * n + c] -= w;
    for (uint i = j + 1u; i < m; ++i) a.v[i * n + c] -= cmul(a.v[i * n + j], w);
  }
}

// Householder QR (LAPACK's geqr2 with clarfg): column j's reflector zeroes it below the
// diagonal and leaves the real beta on it; H^H is applied to the columns right of j.
void geqrf(uint mat) {
  const uint m = pc.m, n = pc.n, k = min(m, n), t = gl_LocalInvocationID.x;
  BufC a = cmatrix(pc.a, mat, m, n), tau = cmatrix(pc.b, mat, 1u, k);
  for (uint j = 0u; j < k; ++j) {
    REAL part = REAL(0);
    for (uint i = j + 1u + t; i < m; i += WG) part += cnorm2(a.v[i * n + j]);
    s_best[t] = part;
    reduce_best();
    const REAL xnorm2 = s_best[0];
    const CPLX alpha = a.v[j * n + j];
    CPLX tj = CPLX(0), scale = CPLX(1, 0);
    REAL beta = REAL(0);
    if (xnorm2 > REAL(0) || alpha.y != REAL(0)) {
      const REAL r = sqrt(cnorm2(alpha) + xnorm2);
      beta = alpha.x >= REAL(0) ? -r : r;
      tj = CPLX((beta - alpha.x) / beta, -alpha.y / beta);
      scale = cdiv(CPLX(1, 0), CPLX(alpha.x - beta, alpha.y));
    }
    sync();  // every thread has read alpha (and s_best) before they change
    if (tj != CPLX(0)) {
      if (t == 0u) a.v[j * n + j] = CPLX(beta, 0);
      for (uint i = j + 1u + t; i < m; i += WG) a.v[i * n + j] = cmul(a.v[i * n + j], scale);
    }
    if (t == 0u) tau.v[j] = tj;
    sync();
    if (tj != CPLX(0)) apply_reflector(a, m, n, j, conjg(tj));
    sync();
  }
}

// Q = H_0 H_1 ... H_{k-1}, its first n columns, in place over the reflectors (ung2r).
void orgqr(uint mat) {
  const uint m = pc.m, n = pc.n, k = pc.k, t = gl_LocalInvocationID.x;
  BufC a = cmatrix(pc.a, mat, m, n), tau = cmatrix(pc.b, mat, 1u, k);
  for (uint e = t; e < m * (n - k); e += WG) {  // columns k..n-1 start as the identity's
    const uint i = e / (n - k), c = k + e % (n - k);
    a.v[i * n + c] = CPLX(i == c ? REAL(1) : REAL(0), 0);
  }
  sync();
  for (uint s = 0u; s < k; ++s) {
    const uint j = k - 1u - s;
    const CPLX tj = tau.v[j];
    apply_reflector(a, m, n, j, tj);
    sync();
    for (uint i = t; i < m; i += WG) {
      if (i < j) a.v[i * n + j] = CPLX(0);
      else if (i == j) a.v[i * n + j] = CPLX(1, 0) - tj;
      else a.v[i * n + j] = -cmul(tj, a.v[i * n + j]);
    }
    sync();
  }
}

// The rotation of the real kernels (t = s / c the smaller root of t^2 + 2 zeta t - 1),
// after the phase e^{i phi} of the coupling g = |g| e^{i phi}.
void set_rotation(REAL zeta, CPLX phase) {
  const REAL t = (zeta >= REAL(0) ? REAL(1) : REAL(-1)) / (abs(zeta) + sqrt(REAL(1) + zeta * zeta));
  const REAL c = REAL(1) / sqrt(REAL(1) + t * t);
  s_cos = c;
  s_sin = c * t;
  s_phase = phase;
  s_rotate = 1;
  s_rotated = 1;
}

// Columns p, q of the rows x cols matrix x times G = diag(1, e^{-i phi}) R:
// (x_p, x_q) <- (c x_p - s y, s x_p + c y) with y = e^{-i phi} x_q.
void rotate_columns(BufC x, uint rows, uint cols, uint p, uint q) {
  const REAL c = s_cos, s = s_sin;
  const CPLX back = conjg(s_phase);
  for (uint k = gl_LocalInvocationID.x; k < rows; k += WG) {
    const CPLX xp = x.v[k * cols + p], y = cmul(back, x.v[k * cols + q]);
    x.v[k * cols + p] = c * xp - s * y;
    x.v[k * cols + q] = s * xp + c * y;
  }
}

// Sorts indices 0..n-1 of s_best (ascending, or descending) into s_where: thread 0.
void sort_indices(uint n, bool descending) {
  if (gl_LocalInvocationID.x == 0u) {
    for (uint i = 0u; i < n; ++i) s_where[i] = i;
    for (uint i = 1u; i < n; ++i) {
      const uint x = s_where[i];
      uint j = i;
      while (j > 0u && (descending ? s_best[s_where[j - 1u]] < s_best[x]
                                   : s_best[s_where[j - 1u]] > s_best[x])) {
        s_where[j] = s_where[j - 1u];
        --j;
      }
      s_where[j] = x;
    }
  }
  sync();
}

void flag_non_finite_c(CPLX x, uint mat, int code) {
  flag_non_finite(x.x, mat, code);
  flag_non_finite(x.y, mat, code);
}

// Hermitian eigendecomposition by cyclic Jacobi: G^H A G zeroes each off-diagonal pair
// in turn until a sweep rotates nothing; V accumulates the G. The diagonal's imaginary
// parts are ignored, as LAPACK's.
void eigh(uint mat) {
  const uint n = pc.n, t = gl_LocalInvocationID.x;
  BufC a = cmatrix(pc.a, mat, n, n), v = cmatrix(pc.c, mat, n, n);
  BufR w = matrix(pc.b, mat, 1u, n);
  for (uint e = t; e < n * n; e += WG) {
    const uint i = e / n, j = e % n;
    if (j > i) a.v[e] = conjg(a.v[j * n + i]);  // Hermitian from the lower triangle
    else flag_non_finite_c(a.v[e], mat, 1);
    if (i == j) a.v[e].y = REAL(0);
    v.v[e] = CPLX(i == j ? REAL(1) : REAL(0), 0);
  }
  sync();
  bool converged_once = false;
  for (uint sweep = 0u; sweep < 40u; ++sweep) {
    if (t == 0u) s_rotated = 0;
    for (uint p = 0u; p + 1u < n; ++p) {
      for (uint q = p + 1u; q < n; ++q) {
        if (t == 0u) {
          const CPLX apq = a.v[p * n + q];
          const REAL app = a.v[p * n + p].x, aqq = a.v[q * n + q].x;
          const REAL g = sqrt(cnorm2(apq));
          s_rotate = 0;
          if (g > TINY && g > EPS * sqrt(abs(app) * abs(aqq)))
            set_rotation((aqq - app) / (REAL(2) * g), apq / g);
        }
        sync();
        if (s_rotate == 0) {
          barrier();  // all have read s_rotate before thread 0 sets the next pair's
        } else {
          rotate_columns(a, n, n, p, q);
          rotate_columns(v, n, n, p, q);
          sync();
          // The rows: G^H from the left, (row_p, row_q) <- (c row_p - s z, s row_p + c z)
          // with z = e^{i phi} row_q.
          const REAL c = s_cos, s = s_sin;
          const CPLX phase = s_phase;
          for (uint k = t; k < n; k += WG) {
            const CPLX x = a.v[p * n + k], z = cmul(phase, a.v[q * n + k]);
            a.v[p * n + k] = c * x - s * z;
            a.v[q * n + k] = s * x + c * z;
          }
          sync();
          if (t == 0u) a.v[p * n + q] = a.v[q * n + p] = CPLX(0);  // as linalg.comp's eigh
          sync();
        }
      }
    }
    sync();
    const bool converged = s_rotated == 0;
    barrier();  // all have read s_rotated before thread 0 resets it
    if (converged) {
      converged_once = true;
      break;
    }
  }
  if (!converged_once && t == 0u) CohI32(pc.info).v[mat] = 1;
  if (t < n) s_best[t] = a.v[t * n + t].x;
  sync();
  sort_indices(n, false);
  for (uint e = t; e < n * n; e += WG) a.v[e] = v.v[e];
  sync();
  for (uint e = t; e < n * n; e += WG) v.v[e] = a.v[(e / n) * n + s_where[e % n]];
  if (t < n) w.v[t] = s_best[s_where[t]];
}

// One-sided Jacobi (Hestenes) on column pairs until all are orthogonal: sigma_j = |a_j|,
// U's columns a_j / sigma_j, V the accumulated G (A = U S V^H).
void svd(uint mat) {
  const uint m = pc.m, n = pc.n, t = gl_LocalInvocationID.x;
  BufC a = cmatrix(pc.a, mat, m, n), v = cmatrix(pc.c, mat, n, n), u = cmatrix(pc.d, mat, m, n);
  BufR sv = matrix(pc.b, mat, 1u, n);
  for (uint e = t; e < n * n; e += WG) v.v[e] = CPLX((e / n) == (e % n) ? REAL(1) : REAL(0), 0);
  for (uint e = t; e < m * n; e += WG) flag_non_finite_c(a.v[e], mat, -4);
  sync();
  bool converged_once = false;
  for (uint sweep = 0u; sweep < 40u; ++sweep) {
    if (t == 0u) s_rotated = 0;
    for (uint p = 0u; p + 1u < n; ++p) {
      for (uint q = p + 1u; q < n; ++q) {
        REAL al = REAL(0), be = REAL(0);
        CPLX ga = CPLX(0);
        for (uint k = t; k < m; k += WG) {
          const CPLX x = a.v[k * n + p], y = a.v[k * n + q];
          al += cnorm2(x);
          be += cnorm2(y);
          ga += cmul(conjg(x), y);
        }
        s_best[t] = al;
        s_sum1[t] = be;
        s_sum2[t] = ga.x;
        s_sum3[t] = ga.y;
        barrier();
        for (uint s = WG / 2u; s > 0u; s >>= 1) {
          if (t < s) {
            s_best[t] += s_best[t + s];
            s_sum1[t] += s_sum1[t + s];
            s_sum2[t] += s_sum2[t + s];
            s_sum3[t] += s_sum3[t + s];
          }
          barrier();
        }
        if (t == 0u) {
          const REAL alpha = s_best[0], beta = s_sum1[0];
          const CPLX gamma = CPLX(s_sum2[0], s_sum3[0]);
          const REAL g = sqrt(cnorm2(gamma));
          s_rotate = 0;
          if (g > TINY && g > EPS * sqrt(alpha * beta))
            set_rotation((beta - alpha) / (REAL(2) * g), gamma / g);
        }
        sync();
        if (s_rotate != 0) {
          rotate_columns(a, m, n, p, q);
          rotate_columns(v, n, n, p, q);
        }
        sync();
      }
    }
    sync();
    const bool converged = s_rotated == 0;
    barrier();  // all have read s_rotated before thread 0 resets it
    if (converged) {
      converged_once = true;
      break;
    }
  }
  sync();  // the non-finite flag is written first
  if (!converged_once && t == 0u && CohI32(pc.info).v[mat] == 0) CohI32(pc.info).v[mat] = 1;
  if (t < n) {
    REAL norm2 = REAL(0);
    for (uint k = 0u; k < m; ++k) norm2 += cnorm2(a.v[k * n + t]);
    s_best[t] = sqrt(norm2);
  }
  sync();
  sort_indices(n, true);
  for (uint e = t; e < m * n; e += WG) {
    const uint src = s_where[e % n];
    const REAL sigma = s_best[src];
    u.v[e] = sigma > REAL(0) ? a.v[(e / n) * n + src] / sigma : CPLX(0);
  }
  sync();
  for (uint e = t; e < n * n; e += WG) a.v[e] = v.v[e];  // a is m x n, m >= n
  sync();
  for (uint e = t; e < n * n; e += WG) v.v[e] = a.v[(e / n) * n + s_where[e % n]];
  if (t < n) sv.v[t] = s_best[s_where[t]];
}

// Substitution with a triangle of the n x n matrix a (read transposed: of a^T; and
// conjugated: of conj(a)), down (lower) or up, on column `col` of the n x k b.
void substitute(BufC a, BufC b, uint col, bool upper, bool unit, bool transposed,
                bool conjugated) {
  const uint n = pc.n, k = pc.k;
  const uint row_stride = transposed ? 1u : n, col_stride = transposed ? n : 1u;
  for (uint step = 0u; step < n; ++step) {
    const uint i = upper ? n - 1u - step : step;
    CPLX x = b.v[i * k + col];
    const uint first = upper ? i + 1u : 0u, last = upper ? n : i;
    for (uint j = first; j < last; ++j) {
      const CPLX aij = a.v[i * row_stride + j * col_stride];
      x -= cmul(conjugated ? conjg(aij) : aij, b.v[j * k + col]);
    }
    if (!unit) {
      const CPLX d = a.v[i * n + i];
      x = cdiv(x, conjugated ? conjg(d) : d);
    }
    b.v[i * k + col] = x;
  }
}

void swap_rows(BufC b, uint col, uint j, uint p) {
  const uint k = pc.k;
  const CPLX x = b.v[j * k + col];
  b.v[j * k + col] = b.v[p * k + col];
  b.v[p * k + col] = x;
}

void main() {
  if (ALGO == LINALG_LU || ALGO == LINALG_GEQRF || ALGO == LINALG_ORGQR || ALGO == LINALG_EIGH ||
      ALGO == LINALG_SVD) {
    const uint mat = group_id();
    if (mat >= pc.batch) return;
    if (ALGO == LINALG_LU) lu(mat);
    else if (ALGO == LINALG_GEQRF) geqrf(mat);
    else if (ALGO == LINALG_ORGQR) orgqr(mat);
    else if (ALGO == LINALG_EIGH) eigh(mat);
    else svd(mat);
    return;
  }
  const uint id = group_id() * WG + gl_LocalInvocationID.x;
  if (id >= pc.batch * pc.k) return;
  const uint mat = id / pc.k, col = id % pc.k;
  const uint n = pc.n, k = pc.k;
  BufC a = cmatrix(pc.a, mat, n, n), b = cmatrix(pc.b, mat, n, k);
  if (ALGO == LINALG_TRSM) {
    substitute(a, b, col, (pc.flags & LINALG_UPPER) != 0u, (pc.flags & LINALG_UNIT) != 0u, false,
               false);
    return;
  }
  // LU_SOLVE: P A = L U, so x = U^-1 L^-1 P b; and A^H x = b is x = P^T L^-H U^-H b.
  CohI32 piv = CohI32(pc.pivots);
  if ((pc.flags & LINALG_ADJOINT) == 0u) {
    for (uint j = 0u; j < n; ++j) swap_rows(b, col, j, uint(piv.v[mat * n + j] - 1));
    substitute(a, b, col, false, true, false, false);
    substitute(a, b, col, true, false, false, false);
  } else {
    substitute(a, b, col, false, false, true, true);  // U^H: lower
    substitute(a, b, col, true, true, true, true);    // L^H: upper, unit
    for (uint s = 0u; s < n; ++s) {
      const uint j = n - 1u - s;
      swap_rows(b, col, j, uint(piv.v[mat * n + j] - 1));
    }
  }
}
