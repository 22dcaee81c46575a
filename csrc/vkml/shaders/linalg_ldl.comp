#version 450
// LDL^T of symmetric matrices with Bunch-Kaufman pivoting, and solves with it
// (vkml/ops/linalg.h: LDL, LDL_SOLVE), as LAPACK's sytf2 and sytrs on the lower
// triangle, whose output layout and pivots torch.linalg.ldl_factor returns.
// LDL: one workgroup per matrix. Thread 0 picks each step's pivot (a 1x1 block, or a
// 2x2 one when no diagonal entry is large enough against its column, alpha =
// (1 + sqrt 17) / 8) and swaps rows and columns; the workgroup then updates the
// trailing triangle (rank 1, or rank 2 with the block's inverse).
// LDL_SOLVE: one thread per right-hand-side column: L, D, then L^T, with the swaps.
//! dtypes f32 f64
#include "common.glsl"
#include "linalg_push.h"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int ALGO = LINALG_LDL;
layout(constant_id = 1) const uint WG = 256;

#include "linalg_common.glsl"

shared uint s_step;  // 1 or 2: the current block's order
shared int s_zero;   // the column is zero: D singular, nothing to update

// The first i in [from, to) with the largest |a[i * rs + c * cs]| (LAPACK's idamax).
uint first_largest(BufR a, uint from, uint to, uint rs, uint c, uint cs) {
  uint best = from;
  REAL big = REAL(-1);
  for (uint i = from; i < to; ++i) {
    const REAL x = abs(a.v[i * rs + c * cs]);
    if (x > big) {
      big = x;
      best = i;
    }
  }
  return best;
}

void swap_entries(BufR a, uint p, uint q) {
  const REAL x = a.v[p];
  a.v[p] = a.v[q];
  a.v[q] = x;
}

// Thread 0: step k's pivot and swaps (sytf2's, 0-based), pivots and info written.
void choose_pivot(BufR a, CohI32 piv, uint k, uint mat) {
  const uint n = pc.n;
  const REAL alpha = (REAL(1) + sqrt(REAL(17))) / REAL(8);
  const REAL absakk = abs(a.v[k * n + k]);
  uint imax = k;
  REAL colmax = REAL(0);
  if (k + 1u < n) {
    imax = first_largest(a, k + 1u, n, n, k, 1u);
    colmax = abs(a.v[imax * n + k]);
  }
  uint step = 1u, kp = k;
  s_zero = 0;
  if (max(absakk, colmax) == REAL(0) || isnan(absakk)) {
    if (CohI32(pc.info).v[mat] == 0) CohI32(pc.info).v[mat] = int(k + 1u);
    s_zero = 1;
  } else if (absakk < alpha * colmax) {
    // The largest off-diagonal entry of row and column imax.
    uint jmax = first_largest(a, k, imax, 1u, imax, n);
    REAL rowmax = abs(a.v[imax * n + jmax]);
    if (imax + 1u < n) {
      jmax = first_largest(a, imax + 1u, n, n, imax, 1u);
      rowmax = max(rowmax, abs(a.v[jmax * n + imax]));
    }
    if (absakk >= alpha * colmax * (colmax / rowmax)) {
      kp = k;
    } else if (abs(a.v[imax * n + imax]) >= alpha * rowmax) {
      kp = imax;
    } else {
      kp = imax;
      step = 2u;
    }
  }
  const uint kk = k + step - 1u;
  if (s_zero == 0 && kp != kk) {  // rows and columns kk and kp of the trailing triangle
    for (uint i = kp + 1u; i < n; ++i) swap_entries(a, i * n + kk, i * n + kp);
    for (uint j = kk + 1u; j < kp; ++j) swap_entries(a, j * n + kk, kp * n + j);
    swap_entries(a, kk * n + kk, kp * n + kp);
    if (step == 2u) swap_entries(a, (k + 1u) * n + k, kp * n + k);
  }
  if (step == 1u) {
    piv.v[k] = int(kp + 1u);
  } else {
    piv.v[k] = -int(kp + 1u);
    piv.v[k + 1u] = -int(kp + 1u);
  }
  s_step = step;
}

void ldl(uint mat) {
  const uint n = pc.n, t = gl_LocalInvocationID.x;
  BufR a = matrix(pc.a, mat, n, n), w = matrix(pc.b, mat, 2u, n);
  CohI32 piv = CohI32(pc.pivots + uint64_t(mat) * n * 4u);
  for (uint k = 0u; k < n;) {
    if (t == 0u) choose_pivot(a, piv, k, mat);
    sync();
    const uint step = s_step;
    const bool zero = s_zero != 0;
    if (!zero && step == 1u && k + 1u < n) {
      // A22 -= x x^T / d, x = A(k+1:, k); then x /= d.
      const REAL d = REAL(1) / a.v[k * n + k];
      const uint rest = n - k - 1u;
      for (uint e = t; e < rest * rest; e += WG) {
        const uint i = k + 1u + e / rest, j = k + 1u + e % rest;
        if (j <= i) a.v[i * n + j] -= a.v[i * n + k] * (d * a.v[j * n + k]);
      }
      sync();
      for (uint i = k + 1u + t; i < n; i += WG) a.v[i * n + k] *= d;
    } else if (!zero && step == 2u && k + 2u < n) {
      // With the 2x2 block's inverse: row j's multipliers (wk, wk1) from the old
      // columns k and k + 1, the trailing triangle updated with them, then stored.
      const REAL d21 = a.v[(k + 1u) * n + k];
      const REAL d11 = a.v[(k + 1u) * n + k + 1u] / d21, d22 = a.v[k * n + k] / d21;
      const REAL scale = (REAL(1) / (d11 * d22 - REAL(1))) / d21;
      for (uint j = k + 2u + t; j < n; j += WG) {
        const REAL x = a.v[j * n + k], y = a.v[j * n + k + 1u];
        w.v[j] = scale * (d11 * x - y);
        w.v[n + j] = scale * (d22 * y - x);
      }
      sync();
      const uint rest = n - k - 2u;
      for (uint e = t; e < rest * rest; e += WG) {
        const uint i = k + 2u + e / rest, j = k + 2u + e % rest;
        if (j <= i)
          a.v[i * n + j] -= a.v[i * n + k] * w.v[j] + a.v[i * n + k + 1u] * w.v[n + j];
      }
      sync();
      for (uint j = k + 2u + t; j < n; j += WG) {
        a.v[j * n + k] = w.v[j];
        a.v[j * n + k + 1u] = w.v[n + j];
      }
    }
    sync();
    k += step;
  }
  for (uint e = t; e < n * n; e += WG)
    if (e % n > e / n) a.v[e] = REAL(0);  // the strict upper triangle is zero in LD
}

void swap_rows(BufR b, uint col, uint p, uint q) {
  const uint k = pc.k;
  swap_entries(b, p * k + col, q * k + col);
}

// Column `col` of b solved with the factors: L D L^T x = P b.
void ldl_solve(uint mat, uint col) {
  const uint n = pc.n, k = pc.k;
  BufR a = matrix(pc.a, mat, n, n), b = matrix(pc.b, mat, n, k);
  CohI32 piv = CohI32(pc.pivots + uint64_t(mat) * n * 4u);
  for (uint i = 0u; i < n;) {  // L and D, the swaps on the way down
    const int p = piv.v[i];
    if (p > 0) {
      if (uint(p - 1) != i) swap_rows(b, col, i, uint(p - 1));
      const REAL x = b.v[i * k + col];
      for (uint r = i + 1u; r < n; ++r) b.v[r * k + col] -= a.v[r * n + i] * x;
      b.v[i * k + col] = x / a.v[i * n + i];
      i += 1u;
    } else {
      if (uint(-p - 1) != i + 1u) swap_rows(b, col, i + 1u, uint(-p - 1));
      const REAL x = b.v[i * k + col], y = b.v[(i + 1u) * k + col];
      for (uint r = i + 2u; r < n; ++r)
        b.v[r * k + col] -= a.v[r * n + i] * x + a.v[r * n + i + 1u] * y;
      const REAL d21 = a.v[(i + 1u) * n + i];
      const REAL d11 = a.v[i * n + i] / d21, d22 = a.v[(i + 1u) * n + i + 1u] / d21;
      const REAL denom = d11 * d22 - REAL(1);
      const REAL bx = x / d21, by = y / d21;
      b.v[i * k + col] = (d22 * bx - by) / denom;
      b.v[(i + 1u) * k + col] = (d11 * by - bx) / denom;
      i += 2u;
    }
  }
  for (uint s = n; s > 0u;) {  // L^T, the swaps on the way up
    const uint i = s - 1u;
    const int p = piv.v[i];
    const uint block = p > 0 ? 1u : 2u;
    for (uint q = 0u; q < block; ++q) {
      const uint row = i - q;
      REAL x = b.v[row * k + col];
      for (uint r = i + 1u; r < n; ++r) x -= a.v[r * n + row] * b.v[r * k + col];
      b.v[row * k + col] = x;
    }
    const uint target = uint((p > 0 ? p : -p) - 1);
    if (target != i) swap_rows(b, col, i, target);
    s -= block;
  }
}

void main() {
  if (ALGO == LINALG_LDL) {
    const uint mat = group_id();
    if (mat < pc.batch) ldl(mat);
    return;
  }
  const uint id = group_id() * WG + gl_LocalInvocationID.x;
  if (id < pc.batch * pc.k) ldl_solve(id / pc.k, id % pc.k);
}
