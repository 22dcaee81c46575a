#pragma once
// Factorizations and solves of large float32 matrices by blocks (as LAPACK's blocked
// routines): the one-workgroup kernels (vkml/ops/linalg.h) on blocks of 64 or 128, and
// vkml's matrix products for the trailing updates, so the O(n^3) work spreads over the
// whole GPU. Every kernel call has a block's size, so a loop-limited driver (Mesa 22.3's
// lavapipe) runs them too. float32 only: vkml has no float64 matrix product.
#include <ATen/ATen.h>

namespace vkml_aten::linalg {

// Orders past this go by blocks.
constexpr int64_t kBlockedOrder = 256;

// Whether t holds float32 matrices whose smaller side is past kBlockedOrder.
bool by_blocks(const at::Tensor& t);

// L (contiguous, batch x n x n): its lower triangle factored in place (potrf), the
// upper one zeroed; info (int32, per matrix): the first failing minor's order, or 0.
void blocked_cholesky(at::Tensor& L, at::Tensor& info);

// LU (contiguous, batch x m x n) factored in place with partial pivoting (getrf);
// pivots (int32, batch x min(m, n), 1-based) and info as LAPACK's.
void blocked_lu(at::Tensor& LU, at::Tensor& pivots, at::Tensor& info);

// X (contiguous, batch x n x k) <- T^-1 X for T the lower (upper) triangle of the
// matrices a (batch x n x n, any strides), unit: its diagonal taken as ones.
void blocked_trsm(const at::Tensor& a, at::Tensor& X, bool upper, bool unit);

// The row order (int64, batch x m) that LAPACK's pivots (int32, batch x k) leave 0..m-1
// in: (P^T A)[i] = A[order[i]].
at::Tensor pivot_order(const at::Tensor& pivots, int64_t m);

}  // namespace vkml_aten::linalg
