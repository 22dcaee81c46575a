#include "linalg_blocked.h"

#include <algorithm>

#include "linalg_common.h"

namespace vkml_aten::linalg {
namespace {

int64_t block_size(int64_t n) { return n >= 1024 ? 128 : 64; }

// Rows r.. (rows of them) and columns c.. of the matrices of t.
at::Tensor part(const at::Tensor& t, int64_t r, int64_t rows, int64_t c, int64_t cols) {
  return t.narrow(-2, r, rows).narrow(-1, c, cols);
}

int64_t matrices(const at::Tensor& t) { return t.numel() / (t.size(-2) * t.size(-1)); }

// info keeps each matrix's first failure; a block's count from `offset`.
void merge_info(at::Tensor& info, const at::Tensor& block_info, int64_t offset) {
  info.copy_(at::where(info.eq(0) & block_info.gt(0), block_info + offset, info));
}

}  // namespace

bool by_blocks(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && t.dim() >= 2 &&
         std::min(t.size(-2), t.size(-1)) > kBlockedOrder;
}

void blocked_cholesky(at::Tensor& L, at::Tensor& info) {
  const int64_t n = L.size(-1), nb = block_size(n), batch = matrices(L);
  at::Tensor block_info = at::empty_like(info);
  for (int64_t k = 0; k < n; k += nb) {
    const int64_t kb = std::min(nb, n - k), rest = n - k - kb;
    at::Tensor d = part(L, k, kb, k, kb).contiguous();
    block_info.zero_();
    run(d, {.algo = LinalgAlgo::Cholesky,
            .a = addr(d),
            .info = addr(block_info),
            .m = kb,
            .n = kb,
            .batch = batch});
    part(L, k, kb, k, kb).copy_(d);
    merge_info(info, block_info, k);
    if (rest == 0) break;
    // L21 = A21 L11^-T, solved as L11^-1 A21^T; then A22 -= L21 L21^T.
    at::Tensor x = part(L, k + kb, rest, k, kb).mT().contiguous();
    run(d, {.algo = LinalgAlgo::Trsm,
            .a = addr(d),
            .b = addr(x),
            .n = kb,
            .k = rest,
            .batch = batch,
            .upper = false});
    part(L, k + kb, rest, k, kb).copy_(x.mT());
    part(L, k + kb, rest, k + kb, rest).sub_(at::matmul(x.mT(), x));
  }
  L.tril_();
}

at::Tensor pivot_order(const at::Tensor& pivots, int64_t m) {
  const int64_t k = pivots.size(-1);
  Shape shape(pivots.sizes().begin(), pivots.sizes().end() - 1);
  at::Tensor piv = pivots.contiguous();
  at::Tensor order = at::empty(with(shape, {m}), pivots.options());
  // (The kernel's float32 variant: the permutation reads and writes int32 alone.)
  const vkml::ops::LinalgArgs args{.algo = LinalgAlgo::Permutation,
                                   .dtype = vkml::DType::f32,
                                   .b = addr(order),
                                   .pivots = addr(piv),
                                   .m = m,
                                   .k = k,
                                   .batch = numel_of(shape)};
  if (order.numel()) guarded([&] { vkml::ops::linalg(vkml_device(order), args); });
  return order.to(at::kLong);
}

void blocked_lu(at::Tensor& LU, at::Tensor& pivots, at::Tensor& info) {
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  const int64_t nb = block_size(k), batch = matrices(LU);
  at::Tensor block_info = at::empty_like(info);
  for (int64_t j = 0; j < k; j += nb) {
    const int64_t jb = std::min(nb, k - j), below = m - j, right = n - j - jb;
    // The panel (rows j.., columns j..j+jb) by the kernel, its pivots relative to row j.
    at::Tensor panel = part(LU, j, below, j, jb).contiguous();
    at::Tensor panel_pivots = at::empty(pivots.narrow(-1, j, jb).sizes(), pivots.options());
    block_info.zero_();
    run(panel, {.algo = LinalgAlgo::Lu,
                .a = addr(panel),
                .pivots = addr(panel_pivots),
                .info = addr(block_info),
                .m = below,
                .n = jb,
                .batch = batch});
    part(LU, j, below, j, jb).copy_(panel);
    pivots.narrow(-1, j, jb).copy_(panel_pivots + j);
    merge_info(info, block_info, j);
    // The panel's row swaps on the columns left and right of it.
    at::Tensor order = pivot_order(panel_pivots, below).unsqueeze(-1);
    for (auto [c, cols] : {std::pair<int64_t, int64_t>{0, j}, {j + jb, right}}) {
      if (cols == 0) continue;
      at::Tensor rows = part(LU, j, below, c, cols);
      rows.copy_(at::take_along_dim(rows, order, -2));
    }
    if (right == 0) continue;
    // U12 = L11^-1 A12 (unit lower); A22 -= L21 U12.
    at::Tensor l11 = part(LU, j, jb, j, jb);
    at::Tensor u12 = part(LU, j, jb, j + jb, right).contiguous();
    blocked_trsm(l11, u12, false, true);
    part(LU, j, jb, j + jb, right).copy_(u12);
    if (below > jb)
      part(LU, j + jb, below - jb, j + jb, right)
          .sub_(at::matmul(part(LU, j + jb, below - jb, j, jb), u12));
  }
}

void blocked_trsm(const at::Tensor& a, at::Tensor& X, bool upper, bool unit) {
  const int64_t n = X.size(-2), k = X.size(-1), nb = block_size(n), batch = matrices(X);
  const int64_t blocks = (n + nb - 1) / nb;
  for (int64_t b = 0; b < blocks; ++b) {
    // Lower: blocks top down; upper: bottom up. Each block solved by the kernel, then
    // taken off the right-hand sides still to solve by a matrix product.
    const int64_t i = upper ? (blocks - 1 - b) * nb : b * nb, ib = std::min(nb, n - i);
    at::Tensor d = part(a, i, ib, i, ib).contiguous();
    at::Tensor x = X.narrow(-2, i, ib).contiguous();
    run(x, {.algo = LinalgAlgo::Trsm,
            .a = addr(d),
            .b = addr(x),
            .n = ib,
            .k = k,
            .batch = batch,
            .upper = upper,
            .unit = unit});
    X.narrow(-2, i, ib).copy_(x);
    if (upper && i > 0)
      X.narrow(-2, 0, i).sub_(at::matmul(part(a, 0, i, i, ib), x));
    else if (!upper && i + ib < n)
      X.narrow(-2, i + ib, n - i - ib).sub_(at::matmul(part(a, i + ib, n - i - ib, i, ib), x));
  }
}

}  // namespace vkml_aten::linalg
