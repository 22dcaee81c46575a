// torch.linalg.ldl_factor(_ex) and ldl_solve on their kernels (vkml/ops/linalg.h: Ldl,
// LdlSolve): LAPACK's Bunch-Kaufman LDL^T of the lower triangle (sytf2 'L'), in its
// layout and pivots, which ldl_solve then takes. float32, and float64 where the device
// has it; complex (hermitian or not) takes the counted CPU route.
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include "fallback.h"
#include "linalg_common.h"

namespace vkml_aten {
namespace {

using namespace linalg;

std::tuple<at::Tensor, at::Tensor, at::Tensor> ldl_factor_ex(const at::Tensor& A, bool hermitian,
                                                             bool check_errors) {
  at::native::squareCheckInputs(A, "torch.linalg.ldl_factor_ex");
  at::native::checkFloatingOrComplex(A, "torch.linalg.ldl_factor_ex");
  if (!native(A, LinalgAlgo::Ldl))
    return cpu_route<at::_ops::linalg_ldl_factor_ex>(A, hermitian, check_errors);
  const int64_t n = A.size(-1);
  const Shape batch = batch_shape(A);
  at::Tensor LD = fresh(A, A.sizes().vec());
  at::Tensor pivots = at::empty(with(batch, {n}), A.options().dtype(at::kInt));
  at::Tensor info = at::zeros(batch, A.options().dtype(at::kInt));
  at::Tensor work = at::empty(with(batch, {2 * n}), A.options());
  if (LD.numel())
    run(LD, {.algo = LinalgAlgo::Ldl,
             .a = addr(LD),
             .b = addr(work),
             .pivots = addr(pivots),
             .info = addr(info),
             .m = n,
             .n = n,
             .batch = numel_of(batch)});
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.ldl_factor_ex", A.dim() == 2);
  return {LD, pivots, info};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> ldl_factor_ex_out(
    const at::Tensor& A, bool hermitian, bool check_errors, at::Tensor& LD, at::Tensor& pivots,
    at::Tensor& info) {
  return write_outs(ldl_factor_ex(A, hermitian, check_errors), LD, pivots, info);
}

at::Tensor ldl_solve(const at::Tensor& LD, const at::Tensor& pivots, const at::Tensor& B,
                     bool hermitian) {
  if (!native(LD, LinalgAlgo::LdlSolve) || B.scalar_type() != LD.scalar_type())
    return cpu_route<at::_ops::linalg_ldl_solve>(LD, pivots, B, hermitian);
  at::native::squareCheckInputs(LD, "torch.linalg.ldl_solve");
  const int64_t n = LD.size(-1);
  TORCH_CHECK(B.dim() >= 2 && B.size(-2) == n,
              "torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B (",
              LD.size(-2), "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  TORCH_CHECK(pivots.scalar_type() == at::kInt,
              "torch.linalg.ldl_solve: Expected pivots to be integers. Got ", pivots.scalar_type());
  const Shape batch = system_batch(LD, B);
  const int64_t k = B.size(-1);
  at::Tensor a = fresh(LD, with(batch, {n, n}));
  at::Tensor p = fresh(pivots, with(batch, {n}));
  at::Tensor X = fresh(B, with(batch, {n, k}));
  if (X.numel())
    run(X, {.algo = LinalgAlgo::LdlSolve,
            .a = addr(a),
            .b = addr(X),
            .pivots = addr(p),
            .n = n,
            .k = k,
            .batch = numel_of(batch)});
  return X;
}
at::Tensor& ldl_solve_out(const at::Tensor& LD, const at::Tensor& pivots, const at::Tensor& B,
                          bool hermitian, at::Tensor& out) {
  return write_out_exact(out, ldl_solve(LD, pivots, B, hermitian));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_ldl_factor_ex", TORCH_FN(ldl_factor_ex));
  m.impl("linalg_ldl_factor_ex.out", TORCH_FN(ldl_factor_ex_out));
  m.impl("linalg_ldl_solve", TORCH_FN(ldl_solve));
  m.impl("linalg_ldl_solve.out", TORCH_FN(ldl_solve_out));
}

}  // namespace vkml_aten
