#version 450
// Dense factorizations and solves of batches of matrices (vkml/ops/linalg.h). The
// algorithm is specialization constant 0 (LINALG_* of linalg_push.h).
//
// CHOLESKY, LU, GEQRF, ORGQR, EIGH and SVD: one workgroup per matrix, unblocked and
// right-looking, in place in global memory (any size; O(n) barriers). Each column:
// its pivot (LU: the first largest magnitude, as LAPACK's isamax), the scaled column,
// then the trailing update shared among the workgroup's threads.
// TRSM and LU_SOLVE: one thread per right-hand-side column, substituting down (and
// up) the triangle; LU_SOLVE first applies the row swaps.
//! dtypes f32 f64
#include "common.glsl"
#include "linalg_push.h"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int ALGO = LINALG_CHOLESKY;
layout(constant_id = 1) const uint WG = 256;

#include "linalg_common.glsl"

shared REAL s_best[WG];
shared REAL s_sum1[WG];
shared REAL s_sum2[WG];
shared uint s_where[WG];
shared int s_stop;
shared REAL s_cos, s_sin;
shared int s_rotate, s_rotated;

void cholesky(uint mat) {
  const uint n = pc.n, t = gl_LocalInvocationID.x;
  BufR a = matrix(pc.a, mat, n, n);
  if (t == 0u) s_stop = 0;
  sync();
  for (uint j = 0u; j < n; ++j) {
    if (t == 0u) {
      REAL d = a.v[j * n + j];
      if (!(d > REAL(0))) {  // not positive (or NaN): the leading minor of order j + 1
        CohI32(pc.info).v[mat] = int(j + 1u);
        s_stop = 1;
      } else {
        a.v[j * n + j] = sqrt(d);
      }
    }
    sync();
    if (s_stop != 0) break;
    const REAL d = a.v[j * n + j];
    for (uint i = j + 1u + t; i < n; i += WG) a.v[i * n + j] /= d;
    sync();
    // Trailing update of the lower triangle: a[i][c] -= a[i][j] a[c][j], j < c <= i.
    const uint rest = n - j - 1u;
    for (uint e = t; e < rest * rest; e += WG) {
      uint i = j + 1u + e / rest, c = j + 1u + e % rest;
      if (c <= i) a.v[i * n + c] -= a.v[i * n + j] * a.v[c * n + j];
    }
    sync();
  }
  // The strict upper triangle is zero in the factor.
  for (uint e = t; e < n * n; e += WG) {
    uint i = e / n, c = e % n;
    if (c > i) a.v[e] = REAL(0);
  }
}

void lu(uint mat) {
  const uint m = pc.m, n = pc.n, t = gl_LocalInvocationID.x;
  const uint steps = min(m, n);
  BufR a = matrix(pc.a, mat, m, n);
  for (uint j = 0u; j < steps; ++j) {
    // The pivot: the first row of the largest magnitude in column j, rows j..m-1.
    REAL best = REAL(-1);
    uint where = j;
    for (uint i = j + t; i < m; i += WG) {
      REAL v = abs(a.v[i * n + j]);
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
        REAL o = s_best[t + s];
        uint ow = s_where[t + s];
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
        REAL x = a.v[j * n + c];
        a.v[j * n + c] = a.v[p * n + c];
        a.v[p * n + c] = x;
      }
    }
    sync();
    const REAL d = a.v[j * n + j];
    if (d != REAL(0)) {
      for (uint i = j + 1u + t; i < m; i += WG) a.v[i * n + j] /= d;
    }
    sync();
    const uint rows = m - j - 1u, cols = n - j - 1u;
    for (uint e = t; e < rows * cols; e += WG) {
      uint i = j + 1u + e / cols, c = j + 1u + e % cols;
      a.v[i * n + c] -= a.v[i * n + j] * a.v[j * n + c];
    }
    sync();
  }
}

// Householder QR (LAPACK's geqr2 and larfg): column j's reflector H = I - tau v v^T
// (v[j] = 1, v below the diagonal stored in place) zeroes it below the diagonal; then H
// is applied to the columns right of j, one column per thread.
void geqrf(uint mat) {
  const uint m = pc.m, n = pc.n, k = min(m, n), t = gl_LocalInvocationID.x;
  BufR a = matrix(pc.a, mat, m, n), tau = matrix(pc.b, mat, 1u, k);
  for (uint j = 0u; j < k; ++j) {
    REAL part = REAL(0);
    for (uint i = j + 1u + t; i < m; i += WG) part += a.v[i * n + j] * a.v[i * n + j];
    s_best[t] = part;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
      if (t < s) s_best[t] += s_best[t + s];
      barrier();
    }
    const REAL xnorm2 = s_best[0];
    const REAL alpha = a.v[j * n + j];
    REAL tj = REAL(0), scale = REAL(1);
    if (xnorm2 > REAL(0)) {
      REAL r = sqrt(alpha * alpha + xnorm2);
      REAL beta = alpha >= REAL(0) ? -r : r;
      tj = (beta - alpha) / beta;
      scale = REAL(1) / (alpha - beta);
    }
    sync();  // every thread has read alpha before it changes
    if (t == 0u) {
      tau.v[j] = tj;
      if (tj != REAL(0)) a.v[j * n + j] = alpha >= REAL(0) ? -sqrt(alpha * alpha + xnorm2)
                                                            : sqrt(alpha * alpha + xnorm2);
    }
    if (tj != REAL(0))
      for (uint i = j + 1u + t; i < m; i += WG) a.v[i * n + j] *= scale;
    sync();
    if (tj != REAL(0)) {
      for (uint c = j + 1u + t; c < n; c += WG) {
        REAL w = a.v[j * n + c];
        for (uint i = j + 1u; i < m; ++i) w += a.v[i * n + j] * a.v[i * n + c];
        w *= tj;
        a.v[j * n + c] -= w;
        for (uint i = j + 1u; i < m; ++i) a.v[i * n + c] -= w * a.v[i * n + j];
      }
    }
    sync();
  }
}

// Q = H_0 H_1 ... H_{k-1}, its first n columns, in place over the reflectors (LAPACK's
// org2r): from the last reflector back, each applied to the columns right of it.
void orgqr(uint mat) {
  const uint m = pc.m, n = pc.n, k = pc.k, t = gl_LocalInvocationID.x;
  BufR a = matrix(pc.a, mat, m, n), tau = matrix(pc.b, mat, 1u, k);
  for (uint e = t; e < m * (n - k); e += WG) {  // columns k..n-1 start as the identity's
    uint i = e / (n - k), c = k + e % (n - k);
    a.v[i * n + c] = i == c ? REAL(1) : REAL(0);
  }
  sync();
  for (uint s = 0u; s < k; ++s) {
    const uint j = k - 1u - s;
    const REAL tj = tau.v[j];
    for (uint c = j + 1u + t; c < n; c += WG) {
      REAL w = a.v[j * n + c];
      for (uint i = j + 1u; i < m; ++i) w += a.v[i * n + j] * a.v[i * n + c];
      w *= tj;
      a.v[j * n + c] -= w;
      for (uint i = j + 1u; i < m; ++i) a.v[i * n + c] -= w * a.v[i * n + j];
    }
    sync();
    for (uint i = t; i < m; i += WG) {
      if (i < j) a.v[i * n + j] = REAL(0);
      else if (i == j) a.v[i * n + j] = REAL(1) - tj;
      else a.v[i * n + j] *= -tj;
    }
    sync();
  }
}

// Sums s_best, s_sum1 and s_sum2 over the workgroup into their first element.
void reduce_three() {
  const uint t = gl_LocalInvocationID.x;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (t < s) {
      s_best[t] += s_best[t + s];
      s_sum1[t] += s_sum1[t + s];
      s_sum2[t] += s_sum2[t + s];
    }
    barrier();
  }
}

// The rotation (c, s) with t = s / c the smaller root of t^2 + 2 zeta t - 1 = 0.
void set_rotation(REAL zeta) {
  REAL t = (zeta >= REAL(0) ? REAL(1) : REAL(-1)) / (abs(zeta) + sqrt(REAL(1) + zeta * zeta));
  REAL c = REAL(1) / sqrt(REAL(1) + t * t);
  s_cos = c;
  s_sin = c * t;
  s_rotate = 1;
  s_rotated = 1;
}

// Rotates columns p, q of the rows x cols matrix x: (x_p, x_q) <- (c x_p - s x_q, s x_p + c x_q).
void rotate_columns(BufR x, uint rows, uint cols, uint p, uint q) {
  const REAL c = s_cos, s = s_sin;
  for (uint k = gl_LocalInvocationID.x; k < rows; k += WG) {
    REAL xp = x.v[k * cols + p], xq = x.v[k * cols + q];
    x.v[k * cols + p] = c * xp - s * xq;
    x.v[k * cols + q] = s * xp + c * xq;
  }
}

// Sorts indices 0..n-1 of s_best (ascending, or descending) into s_where: thread 0,
// insertion sort (n <= LINALG_EIGH_MAX).
void sort_indices(uint n, bool descending) {
  if (gl_LocalInvocationID.x == 0u) {
    for (uint i = 0u; i < n; ++i) s_where[i] = i;
    for (uint i = 1u; i < n; ++i) {
      uint x = s_where[i];
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

// Symmetric eigendecomposition by cyclic Jacobi: rotations J^T A J zero each
// off-diagonal pair in turn until a sweep rotates nothing; V accumulates the J.
void eigh(uint mat) {
  const uint n = pc.n, t = gl_LocalInvocationID.x;
  BufR a = matrix(pc.a, mat, n, n), w = matrix(pc.b, mat, 1u, n), v = matrix(pc.c, mat, n, n);
  for (uint e = t; e < n * n; e += WG) {
    uint i = e / n, j = e % n;
    if (j > i) a.v[e] = a.v[j * n + i];  // symmetric from the lower triangle
    else flag_non_finite(a.v[e], mat, 1);
    v.v[e] = i == j ? REAL(1) : REAL(0);
  }
  sync();
  bool converged_once = false;
  for (uint sweep = 0u; sweep < 40u; ++sweep) {
    if (t == 0u) s_rotated = 0;
    for (uint p = 0u; p + 1u < n; ++p) {
      for (uint q = p + 1u; q < n; ++q) {
        if (t == 0u) {
          const REAL apq = a.v[p * n + q], app = a.v[p * n + p], aqq = a.v[q * n + q];
          s_rotate = 0;
          if (abs(apq) > TINY && abs(apq) > EPS * sqrt(abs(app) * abs(aqq)))
            set_rotation((aqq - app) / (REAL(2) * apq));
        }
        sync();
        if (s_rotate == 0) {
          barrier();  // all have read s_rotate before thread 0 sets the next pair's
        } else {
          rotate_columns(a, n, n, p, q);
          rotate_columns(v, n, n, p, q);
          sync();
          const REAL c = s_cos, s = s_sin;
          for (uint k = t; k < n; k += WG) {  // the rows
            REAL x = a.v[p * n + k], y = a.v[q * n + k];
            a.v[p * n + k] = c * x - s * y;
            a.v[q * n + k] = s * x + c * y;
          }
          sync();
          // The rotation annihilates a_pq; left to rounding, a pair of equal eigenvalues (a
          // complex Hermitian matrix's real embedding has only such pairs) kept a_pq at a
          // few ulps of a_pp, over the threshold, and float64 never converged.
          if (t == 0u) a.v[p * n + q] = a.v[q * n + p] = REAL(0);
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
  if (t < n) s_best[t] = a.v[t * n + t];
  sync();
  sort_indices(n, false);
  for (uint e = t; e < n * n; e += WG) a.v[e] = v.v[e];
  sync();
  for (uint e = t; e < n * n; e += WG) v.v[e] = a.v[(e / n) * n + s_where[e % n]];
  if (t < n) w.v[t] = s_best[s_where[t]];
}

// Singular values by one-sided Jacobi (Hestenes): rotations of column pairs of A until
// all are orthogonal; then sigma_j = |a_j|, U's columns a_j / sigma_j, V the rotations.
void svd(uint mat) {
  const uint m = pc.m, n = pc.n, t = gl_LocalInvocationID.x;
  BufR a = matrix(pc.a, mat, m, n), sv = matrix(pc.b, mat, 1u, n);
  BufR v = matrix(pc.c, mat, n, n), u = matrix(pc.d, mat, m, n);
  for (uint e = t; e < n * n; e += WG) v.v[e] = (e / n) == (e % n) ? REAL(1) : REAL(0);
  for (uint e = t; e < m * n; e += WG) flag_non_finite(a.v[e], mat, -4);
  sync();
  bool converged_once = false;
  for (uint sweep = 0u; sweep < 40u; ++sweep) {
    if (t == 0u) s_rotated = 0;
    for (uint p = 0u; p + 1u < n; ++p) {
      for (uint q = p + 1u; q < n; ++q) {
        REAL al = REAL(0), be = REAL(0), ga = REAL(0);
        for (uint k = t; k < m; k += WG) {
          REAL x = a.v[k * n + p], y = a.v[k * n + q];
          al += x * x;
          be += y * y;
          ga += x * y;
        }
        s_best[t] = al;
        s_sum1[t] = be;
        s_sum2[t] = ga;
        reduce_three();
        if (t == 0u) {
          const REAL alpha = s_best[0], beta = s_sum1[0], gamma = s_sum2[0];
          s_rotate = 0;
          if (abs(gamma) > TINY && abs(gamma) > EPS * sqrt(alpha * beta))
            set_rotation((beta - alpha) / (REAL(2) * gamma));
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
    for (uint k = 0u; k < m; ++k) norm2 += a.v[k * n + t] * a.v[k * n + t];
    s_best[t] = sqrt(norm2);
  }
  sync();
  sort_indices(n, true);
  for (uint e = t; e < m * n; e += WG) {
    const uint src = s_where[e % n];
    const REAL sigma = s_best[src];
    u.v[e] = sigma > REAL(0) ? a.v[(e / n) * n + src] / sigma : REAL(0);
  }
  sync();
  for (uint e = t; e < n * n; e += WG) a.v[e] = v.v[e];  // a is m x n, m >= n
  sync();
  for (uint e = t; e < n * n; e += WG) v.v[e] = a.v[(e / n) * n + s_where[e % n]];
  if (t < n) sv.v[t] = s_best[s_where[t]];
}

// Substitution with a triangle of the n x n matrix a (read transposed: of a^T), down
// (lower) or up, on column `col` of the n x k right-hand side b.
void substitute(BufR a, BufR b, uint col, bool upper, bool unit, bool transposed) {
  const uint n = pc.n, k = pc.k;
  const uint row_stride = transposed ? 1u : n, col_stride = transposed ? n : 1u;
  for (uint step = 0u; step < n; ++step) {
    const uint i = upper ? n - 1u - step : step;
    REAL x = b.v[i * k + col];
    if (upper) {
      for (uint j = i + 1u; j < n; ++j) x -= a.v[i * row_stride + j * col_stride] * b.v[j * k + col];
    } else {
      for (uint j = 0u; j < i; ++j) x -= a.v[i * row_stride + j * col_stride] * b.v[j * k + col];
    }
    if (!unit) x /= a.v[i * n + i];
    b.v[i * k + col] = x;
  }
}

void swap_rows(BufR b, uint col, uint j, uint p) {
  const uint k = pc.k;
  REAL x = b.v[j * k + col];
  b.v[j * k + col] = b.v[p * k + col];
  b.v[p * k + col] = x;
}

void main() {
  if (ALGO == LINALG_CHOLESKY || ALGO == LINALG_LU || ALGO == LINALG_GEQRF ||
      ALGO == LINALG_ORGQR || ALGO == LINALG_EIGH || ALGO == LINALG_SVD) {
    const uint mat = group_id();
    if (mat >= pc.batch) return;
    if (ALGO == LINALG_CHOLESKY) cholesky(mat);
    else if (ALGO == LINALG_LU) lu(mat);
    else if (ALGO == LINALG_GEQRF) geqrf(mat);
    else if (ALGO == LINALG_ORGQR) orgqr(mat);
    else if (ALGO == LINALG_EIGH) eigh(mat);
    else svd(mat);
    return;
  }
  const uint id = group_id() * WG + gl_LocalInvocationID.x;
  if (ALGO == LINALG_PERMUTATION) {
    // The rows of A in the order LAPACK's swaps leave them: (P^T A)[i] = A[perm[i]].
    if (id >= pc.batch) return;
    CohI32 perm = CohI32(pc.b), piv = CohI32(pc.pivots);
    const uint m = pc.m, k = pc.k;
    for (uint i = 0u; i < m; ++i) perm.v[id * m + i] = int(i);
    for (uint j = 0u; j < k; ++j) {
      uint p = uint(piv.v[id * k + j] - 1);
      int x = perm.v[id * m + j];
      perm.v[id * m + j] = perm.v[id * m + p];
      perm.v[id * m + p] = x;
    }
    return;
  }
  if (id >= pc.batch * pc.k) return;
  const uint mat = id / pc.k, col = id % pc.k;
  const uint n = pc.n, k = pc.k;
  BufR a = matrix(pc.a, mat, n, n), b = matrix(pc.b, mat, n, k);
  if (ALGO == LINALG_TRSM) {
    substitute(a, b, col, (pc.flags & LINALG_UPPER) != 0u, (pc.flags & LINALG_UNIT) != 0u, false);
    return;
  }
  // LU_SOLVE: P A = L U with P LAPACK's sequence of row swaps, so x = U^-1 L^-1 P b;
  // and A^T x = b is x = P^T L^-T U^-T b (the swaps undone in reverse order).
  CohI32 piv = CohI32(pc.pivots);
  if ((pc.flags & LINALG_ADJOINT) == 0u) {
    for (uint j = 0u; j < n; ++j) swap_rows(b, col, j, uint(piv.v[mat * n + j] - 1));
    substitute(a, b, col, false, true, false);
    substitute(a, b, col, true, false, false);
  } else {
    substitute(a, b, col, false, false, true);  // U^T: lower
    substitute(a, b, col, true, true, true);    // L^T: upper, unit
    for (uint s = 0u; s < n; ++s) {
      const uint j = n - 1u - s;
      swap_rows(b, col, j, uint(piv.v[mat * n + j] - 1));
    }
  }
}
