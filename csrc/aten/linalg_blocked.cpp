#include "linalg_blocked.h"

#include <algorithm>
#include <atomic>

#include "linalg_common.h"

namespace vkml_aten::linalg {
namespace {

std::atomic<int64_t> g_order{Blocking{}.order}, g_block{Blocking{}.block};

// Rows r.. (rows of them) and columns c.. of the matrices of t.
at::Tensor part(const at::Tensor& t, int64_t r, int64_t rows, int64_t c, int64_t cols) {
  return t.narrow(-2, r, rows).narrow(-1, c, cols);
}

int64_t matrices(const at::Tensor& t) { return t.numel() / (t.size(-2) * t.size(-1)); }

// info keeps each matrix's first failure; a block's count from `offset`.
void merge_info(at::Tensor& info, const at::Tensor& block_info, int64_t offset) {
  info.copy_(at::where(info.eq(0) & block_info.gt(0), block_info + offset, info));
}

// T of the block reflector H_0 ... H_{b-1} = I - V T V^T (larft, forward, columnwise):
// T^-1 = diag(1 / tau) + striu(V^T V), so T = (I + diag(tau) striu(V^T V))^-1 diag(tau),
// one unit upper triangular solve that a zero tau (H = I) leaves well posed.
at::Tensor block_reflector_t(const at::Tensor& V, const at::Tensor& tau) {
  const int64_t b = tau.size(-1);
  at::Tensor unit =
      (at::matmul(V.mT(), V).triu(1) * tau.unsqueeze(-1) + at::eye(b, V.options())).contiguous();
  at::Tensor T = at::diag_embed(tau).contiguous();
  run(T, {.algo = LinalgAlgo::Trsm,
          .a = addr(unit),
          .b = addr(T),
          .n = b,
          .k = b,
          .batch = matrices(T),
          .upper = true,
          .unit = true});
  return T;
}

// The unit lower trapezoid of a panel's reflectors.
at::Tensor reflectors_of(const at::Tensor& panel) {
  return panel.tril(-1) + at::eye(panel.size(-2), panel.size(-1), panel.options());
}

}  // namespace

Blocking blocking() { return {g_order.load(), g_block.load()}; }
void set_blocking(Blocking b) {
  g_order.store(b.order);
  g_block.store(b.block);
}

int64_t block_size(int64_t n) {
  const int64_t b = g_block.load();
  return b > 0 ? b : n >= 1024 ? 128 : 64;
}

bool on_device(const at::Tensor& A, LinalgAlgo algo) {
  if (!by_blocks(A, algo)) return native(A, algo);
  if (!native_dtype(A)) return false;
  const LinalgAlgo panel = algo == LinalgAlgo::LuSolve ? LinalgAlgo::Lu : algo;
  if (panel != LinalgAlgo::Lu && panel != LinalgAlgo::Geqrf) return true;
  const int64_t m = A.size(-2), k = std::min(m, A.size(-1));
  return vkml::ops::linalg_fits(vkml_device(A), panel, m, block_size(k));
}

bool by_blocks(const at::Tensor& t, LinalgAlgo algo) {
  if ((t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble) || t.dim() < 2)
    return false;
  const int64_t m = t.size(-2), n = t.size(-1);
  // Past the blocking order; or, under a loop-limited driver, past what the whole-matrix
  // kernel takes (lavapipe: the LU solve from order 242), rather than to the CPU.
  return std::min(m, n) > g_order.load() || !vkml::ops::linalg_fits(vkml_device(t), algo, m, n);
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

void blocked_geqrf(at::Tensor& a, at::Tensor& tau) {
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const int64_t nb = block_size(k), batch = matrices(a);
  for (int64_t j = 0; j < k; j += nb) {
    const int64_t jb = std::min(nb, k - j), rows = m - j, right = n - j - jb;
    at::Tensor panel = part(a, j, rows, j, jb).contiguous();
    at::Tensor panel_tau = at::empty(tau.narrow(-1, j, jb).sizes(), tau.options());
    run(panel, {.algo = LinalgAlgo::Geqrf,
                .a = addr(panel),
                .b = addr(panel_tau),
                .m = rows,
                .n = jb,
                .batch = batch});
    part(a, j, rows, j, jb).copy_(panel);
    tau.narrow(-1, j, jb).copy_(panel_tau);
    if (right == 0) continue;
    // Q_panel^T C = C - V T^T V^T C for the columns right of the panel.
    at::Tensor V = reflectors_of(panel);
    at::Tensor T = block_reflector_t(V, panel_tau);
    at::Tensor C = part(a, j, rows, j + jb, right);
    C.sub_(at::matmul(V, at::matmul(T.mT(), at::matmul(V.mT(), C))));
  }
}

at::Tensor blocked_orgqr(const at::Tensor& reflectors, const at::Tensor& tau) {
  const int64_t m = reflectors.size(-2), n = reflectors.size(-1), k = tau.size(-1);
  const int64_t nb = block_size(k);
  at::Tensor Q = at::eye(m, n, reflectors.options()).expand(reflectors.sizes()).contiguous();
  for (int64_t j = (k - 1) / nb * nb; j >= 0; j -= nb) {
    // Q = Q_0 (Q_1 (... I)): block j's reflectors act on rows j.. and, so far, on the
    // columns j.. alone (the earlier ones are still the identity's there).
    const int64_t jb = std::min(nb, k - j), rows = m - j;
    at::Tensor V = reflectors_of(part(reflectors, j, rows, j, jb));
    at::Tensor T = block_reflector_t(V, tau.narrow(-1, j, jb));
    at::Tensor C = part(Q, j, rows, j, n - j);
    C.sub_(at::matmul(V, at::matmul(T, at::matmul(V.mT(), C))));
  }
  return Q;
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
