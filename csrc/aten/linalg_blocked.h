#pragma once
// Factorizations and solves of large real matrices by blocks (as LAPACK's blocked
// routines): the one-workgroup kernels (vkml/ops/linalg.h) on blocks of 64 or 128, and
// vkml's matrix products for the trailing updates, so the O(n^3) work spreads over the
// whole GPU. Every kernel call has a block's size, so a loop-limited driver (Mesa 22.3's
// lavapipe) runs them too. float32 and float64 (where the device has it).
#include <ATen/ATen.h>

#include "vkml/ops/linalg.h"

namespace vkml_aten::linalg {

// Matrices whose smaller side is past `order` go by blocks of `block` columns (0: 64,
// or 128 from order 1024); on a loop-limited driver also below, where the whole-matrix
// kernel stops fitting. The defaults, 256 and 0, are what the GPUs want;
// tests set small ones (torch_vkml._C._set_linalg_blocking) to run many blocks on small
// matrices.
struct Blocking {
  int64_t order = 256, block = 0;
};
Blocking blocking();
void set_blocking(Blocking b);

// Whether t holds float32 or float64 matrices that go by blocks for `algo`: their smaller
// side past the blocking order, or too large for the whole-matrix kernel on t's device.
bool by_blocks(const at::Tensor& t, vkml::ops::LinalgAlgo algo);

// The block width for matrices of order n.
int64_t block_size(int64_t n);

// Whether A goes to the device for `algo`: real matrices past the blocking order by
// blocks (their kernels have a block's size, except the LU and QR panels, as tall as A,
// which must fit the device: vkml::ops::linalg_fits), the others whole through `algo`'s
// kernel (native() of linalg_common.h).
bool on_device(const at::Tensor& A, vkml::ops::LinalgAlgo algo);

// L (contiguous, batch x n x n): its lower triangle factored in place (potrf), the
// upper one zeroed; info (int32, per matrix): the first failing minor's order, or 0.
void blocked_cholesky(at::Tensor& L, at::Tensor& info);

// LU (contiguous, batch x m x n) factored in place with partial pivoting (getrf);
// pivots (int32, batch x min(m, n), 1-based) and info as LAPACK's.
void blocked_lu(at::Tensor& LU, at::Tensor& pivots, at::Tensor& info);

// X (contiguous, batch x n x k) <- T^-1 X for T the lower (upper) triangle of the
// matrices a (batch x n x n, any strides), unit: its diagonal taken as ones.
void blocked_trsm(const at::Tensor& a, at::Tensor& X, bool upper, bool unit);

// a (contiguous, batch x m x n) -> R above the diagonal, the reflectors below, tau
// (batch x min(m, n)), as geqrf: the kernel on each panel, its block reflector
// I - V T V^T applied to the columns right of it by matrix products.
void blocked_geqrf(at::Tensor& a, at::Tensor& tau);

// Q's first n columns (batch x m x n, m >= n) from the k = tau.size(-1) reflectors below
// the diagonal of `reflectors`, as orgqr: block reflectors applied to the identity's
// columns, the last block first.
at::Tensor blocked_orgqr(const at::Tensor& reflectors, const at::Tensor& tau);

// The row order (int64, batch x m) that LAPACK's pivots (int32, batch x k) leave 0..m-1
// in: (P^T A)[i] = A[order[i]].
at::Tensor pivot_order(const at::Tensor& pivots, int64_t m);

}  // namespace vkml_aten::linalg
