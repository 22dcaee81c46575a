#include "vkml/ops/linalg.h"

#include <limits>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/linalg_push.h"

namespace vkml::ops {

static_assert(int(LinalgAlgo::Cholesky) == LINALG_CHOLESKY && int(LinalgAlgo::Lu) == LINALG_LU &&
              int(LinalgAlgo::Trsm) == LINALG_TRSM && int(LinalgAlgo::LuSolve) == LINALG_LU_SOLVE &&
              int(LinalgAlgo::Permutation) == LINALG_PERMUTATION &&
              int(LinalgAlgo::Geqrf) == LINALG_GEQRF && int(LinalgAlgo::Orgqr) == LINALG_ORGQR &&
              int(LinalgAlgo::Eigh) == LINALG_EIGH && int(LinalgAlgo::Svd) == LINALG_SVD &&
              int(LinalgAlgo::EighTridiagonal) == LINALG_EIGH_TRIDIAGONAL &&
              int(LinalgAlgo::SvdBidiagonal) == LINALG_SVD_BIDIAGONAL &&
              int(LinalgAlgo::Ldl) == LINALG_LDL && int(LinalgAlgo::LdlSolve) == LINALG_LDL_SOLVE);

const int64_t kEighMax = LINALG_EIGH_MAX, kSvdMax = LINALG_SVD_MAX;
const int64_t kCondensedMax = LINALG_CONDENSED_MAX, kCondensedScratch = LINALG_CONDENSED_SCRATCH;

bool linalg_supported(Device& dev, DType t) {
  return t == DType::f32 || (t == DType::f64 && dev.info().supports_fp64);
}

// Thread 0 of a Jacobi SVD workgroup, per column pair: its rows' dot products and the two
// rotations (ceil(rows / 256) each), the reduction's 8 halvings and the pair loop; and
// then the column norms (rows each) and the insertion sort. The sweeps depend on the
// data: float32 matrices of order 32 take 8 or 9 (uniform and normal entries, a model
// of the kernel on the CPU); 12 are counted. Counted against 90 % of the limit: on
// Mesa 22.3's lavapipe, 32 x 32 uniform matrices crashed and order 31 came back wrong
// while the model put them past it, and orders up to 28 were right.
static int64_t jacobi_svd_iterations(int64_t rows, int64_t k) {
  const int64_t per_pair = 10 + 2 * ((rows + 255) / 256);
  return 12 * k * (k - 1) / 2 * per_pair + rows + k * k;
}

bool svd_by_jacobi(Device& dev, int64_t m, int64_t n) {
  const int64_t rows = std::max(m, n), k = std::min(m, n);
  if (k > kSvdMax) return false;
  const int64_t limit = dev.info().loop_iteration_limit;
  return limit == 0 || jacobi_svd_iterations(rows, k) <= limit * 9 / 10;
}

// Thread 0 of a Jacobi eigh workgroup, per pair: the pair loop and, where it rotates, the
// two column rotations and the row one (ceil(n / 256) each), with 12 sweeps counted
// (float32 and float64 matrices of order 48 take 8 or 9). Calibrated on Mesa 22.3's
// lavapipe, where float64 of order 48 (9 sweeps) crashed while float32 of 48 (8) and
// float64 of 44 (9) were right: about 7 iterations per pair for such orders.
static int64_t jacobi_eigh_iterations(int64_t n) {
  const int64_t per_pair = 4 + 3 * ((n + 255) / 256);
  return 12 * n * (n - 1) / 2 * per_pair + n * n;
}

bool eigh_by_jacobi(Device& dev, int64_t n) {
  if (n > kEighMax) return false;
  const int64_t limit = dev.info().loop_iteration_limit;
  return limit == 0 || jacobi_eigh_iterations(n) <= limit * 9 / 10;
}

bool linalg_fits(Device& dev, LinalgAlgo algo, int64_t m, int64_t n) {
  const int64_t rows = std::max(m, n), k = std::min(m, n);
  if (algo == LinalgAlgo::Eigh && !eigh_by_jacobi(dev, n)) algo = LinalgAlgo::EighTridiagonal;
  if (algo == LinalgAlgo::Svd && !svd_by_jacobi(dev, m, n)) algo = LinalgAlgo::SvdBidiagonal;
  if ((algo == LinalgAlgo::EighTridiagonal || algo == LinalgAlgo::SvdBidiagonal) &&
      k > kCondensedMax)
    return false;
  const int64_t limit = dev.info().loop_iteration_limit;
  if (limit == 0) return true;
  // The loop iterations of the busiest thread of a workgroup of 256, counted from the
  // kernels' loops where they are plain (the solves exactly; the factorizations' trailing
  // updates, n^3 / 768 for Cholesky, a thread's whole columns in QR), kept under half
  // the limit for what the count leaves out. Where thread 0's work depends on the data
  // (the Jacobi sweeps, the QR steps of the condensed forms), the bounds are measured on
  // Mesa 22.3's lavapipe with a third to spare: eigh of order 128 and SVD of 72 columns
  // by 79 rows came back wrong, while 100 and 64 x 71 were right. Jacobi SVD is counted
  // (jacobi_svd_iterations).
  const int64_t half = limit / 2, most = limit * 9 / 10;
  switch (algo) {
    case LinalgAlgo::Cholesky:
      return n * n * n / 768 + 4 * n <= half;
    case LinalgAlgo::Lu:
      return (m * n * k - (m + n) * k * k / 2 + k * k * k / 3) / 256 + 10 * k <= half;
    case LinalgAlgo::Geqrf:
    case LinalgAlgo::Orgqr:
      return 2 * rows * k - k * k + 10 * k <= half;
    case LinalgAlgo::Trsm:
      return n * (n + 1) / 2 <= most;
    case LinalgAlgo::LuSolve:
    case LinalgAlgo::LdlSolve:
      return n * n + 2 * n <= most;
    case LinalgAlgo::Ldl:  // thread 0's pivot searches and swaps, and the trailing updates
      return 4 * n * n + n * n * n / 768 <= half;
    case LinalgAlgo::Permutation:
      return m + n <= most;
    case LinalgAlgo::Eigh:
      return true;  // eigh_by_jacobi
    case LinalgAlgo::Svd:
      return true;  // svd_by_jacobi
    case LinalgAlgo::EighTridiagonal:
      return n <= 96;
    case LinalgAlgo::SvdBidiagonal:
      return k <= 48 && rows <= 128;
  }
  return false;
}

// The kernels' push constants for `a`, with m rows.
static linalg_detail::Push push_of(const LinalgArgs& a, int64_t m) {
  linalg_detail::Push p{};
  p.a = a.a;
  p.b = a.b;
  p.c = a.c;
  p.d = a.d;
  p.pivots = a.pivots;
  p.info = a.info;
  p.scratch = a.scratch;
  p.m = uint32_t(m);
  p.n = uint32_t(a.n);
  p.k = uint32_t(a.k);
  p.batch = uint32_t(a.batch);
  p.flags = (a.upper ? LINALG_UPPER : 0u) | (a.unit ? LINALG_UNIT : 0u) |
            (a.adjoint ? LINALG_ADJOINT : 0u) | (a.values_only ? LINALG_VALUES_ONLY : 0u);
  return p;
}

// EighTridiagonal, SvdBidiagonal: one workgroup per matrix.
static void condensed(Device& dev, const LinalgArgs& a) {
  const bool svd = a.algo == LinalgAlgo::SvdBidiagonal;
  const int64_t m = svd ? a.m : a.n;
  VKML_CHECK_ARG(a.n <= kCondensedMax && m >= a.n, "linalg: condensed form shape not supported");
  VKML_CHECK_ARG(a.batch * m * a.n < (int64_t(1) << 32), "linalg: more than 2^32 elements");
  if (a.batch == 0 || a.n == 0) return;
  const size_t item = itemsize(a.dtype);
  const linalg_detail::Push p = push_of(a, m);
  Access access;
  access.update(span_elems(a.a, a.batch * m * a.n, item));
  access.update(span_elems(a.info, a.batch, 4));
  access.update(span_elems(a.scratch, a.batch * kCondensedScratch * a.n, item));
  access.write(span_elems(a.b, a.batch * a.n, item));
  if (!a.values_only) {
    access.update(span_elems(a.c, a.batch * a.n * a.n, item));
    if (svd) access.update(span_elems(a.d, a.batch * m * a.n, item));
  }
  VkPipeline pipeline =
      dev.pipelines().get(shaders::linalg_condensed(a.dtype), {int(a.algo), int32_t(256)});
  dispatch_groups(dev, pipeline, &p, sizeof(p), uint64_t(a.batch), &access);
}

bool complex_algo(LinalgAlgo algo) {
  switch (algo) {
    case LinalgAlgo::Lu:
    case LinalgAlgo::LuSolve:
    case LinalgAlgo::Trsm:
    case LinalgAlgo::Geqrf:
    case LinalgAlgo::Orgqr:
    case LinalgAlgo::Eigh:
    case LinalgAlgo::Svd:
      return true;
    default:
      return false;
  }
}

void linalg(Device& dev, const LinalgArgs& a) {
  VKML_CHECK_ARG(linalg_supported(dev, a.dtype), "linalg: float32 or float64 only");
  VKML_CHECK_ARG(!a.complex || complex_algo(a.algo),
                 "linalg: no complex kernel for this algorithm");
  if (a.algo == LinalgAlgo::EighTridiagonal || a.algo == LinalgAlgo::SvdBidiagonal)
    return condensed(dev, a);
  if (a.algo == LinalgAlgo::Permutation) {
    if (a.batch == 0 || a.m == 0) return;
    const linalg_detail::Push p = push_of(a, a.m);
    Access access;
    access.read(span_elems(a.pivots, a.batch * a.k, 4));
    access.write(span_elems(a.b, a.batch * a.m, 4));
    VkPipeline pipeline = dev.pipelines().get(shaders::linalg(a.dtype), {int(a.algo), int32_t(64)});
    dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(a.batch), 64, &access);
    return;
  }
  if (a.batch == 0 || a.n == 0 || a.m < 0) return;
  const bool jacobi = a.algo == LinalgAlgo::Eigh || a.algo == LinalgAlgo::Svd;
  const bool factor = a.algo == LinalgAlgo::Cholesky || a.algo == LinalgAlgo::Lu ||
                      a.algo == LinalgAlgo::Geqrf || a.algo == LinalgAlgo::Orgqr ||
                      a.algo == LinalgAlgo::Ldl || jacobi;
  const bool householder = a.algo == LinalgAlgo::Geqrf || a.algo == LinalgAlgo::Orgqr;
  if (!factor && a.k == 0) return;
  const int64_t m =
      a.algo == LinalgAlgo::Lu || householder || a.algo == LinalgAlgo::Svd ? a.m : a.n;
  VKML_CHECK_ARG(a.algo != LinalgAlgo::Eigh || a.n <= kEighMax, "linalg: eigh order too large");
  VKML_CHECK_ARG(a.algo != LinalgAlgo::Svd || (a.n <= kSvdMax && a.m >= a.n),
                 "linalg: svd shape not supported");
  VKML_CHECK_ARG(a.batch * m * a.n < (int64_t(1) << 32) && a.batch * a.n * a.k < (int64_t(1) << 32),
                 "linalg: more than 2^32 elements");
  // Matrices (and tau, and right-hand sides) of complex numbers are pairs of reals;
  // eigenvalues and singular values are reals.
  const size_t real_item = itemsize(a.dtype), item = real_item * (a.complex ? 2 : 1);
  const linalg_detail::Push p = push_of(a, m);
  Access access;
  const Span a_span = span_elems(a.a, a.batch * m * a.n, item);
  const int64_t steps = m < a.n ? m : a.n;
  if (factor) {
    access.update(a_span);
    if (a.info) access.update(span_elems(a.info, a.batch, 4));
    if (a.algo == LinalgAlgo::Lu) access.write(span_elems(a.pivots, a.batch * steps, 4));
    if (a.algo == LinalgAlgo::Geqrf) access.write(span_elems(a.b, a.batch * steps, item));
    if (a.algo == LinalgAlgo::Orgqr) access.read(span_elems(a.b, a.batch * a.k, item));
    if (a.algo == LinalgAlgo::Ldl) {
      access.write(span_elems(a.pivots, a.batch * a.n, 4));
      access.update(span_elems(a.b, a.batch * 2 * a.n, item));
    }
    if (jacobi) {
      access.write(span_elems(a.b, a.batch * a.n, real_item));
      access.write(span_elems(a.c, a.batch * a.n * a.n, item));
      if (a.d) access.write(span_elems(a.d, a.batch * m * a.n, item));
    }
  } else {
    access.read(a_span);
    access.update(span_elems(a.b, a.batch * a.n * a.k, item));
    if (a.algo == LinalgAlgo::LuSolve || a.algo == LinalgAlgo::LdlSolve)
      access.read(span_elems(a.pivots, a.batch * a.n, 4));
  }
  const uint32_t wg = factor ? 256u : 64u;
  const bool ldl = a.algo == LinalgAlgo::Ldl || a.algo == LinalgAlgo::LdlSolve;
  const auto shader = a.complex ? shaders::linalg_complex(a.dtype)
                      : ldl     ? shaders::linalg_ldl(a.dtype)
                                : shaders::linalg(a.dtype);
  VkPipeline pipeline = dev.pipelines().get(shader, {int(a.algo), int32_t(wg)});
  if (factor)
    dispatch_groups(dev, pipeline, &p, sizeof(p), uint64_t(a.batch), &access);
  else
    dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(a.batch * a.k), wg, &access);
}

}  // namespace vkml::ops
