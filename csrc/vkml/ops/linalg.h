#pragma once
// Dense linear algebra of batches of matrices (shaders/linalg.comp,
// linalg_condensed.comp): Cholesky, LU and QR factorizations, triangular and LU
// solves, symmetric eigendecomposition and SVD. Matrices are row-major and contiguous, one
// after another; float32, and float64 where the device has shaderFloat64; complex ones
// of either for the algorithms complex_algo() names.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

enum class LinalgAlgo : int {
  Cholesky = 0,     // a: n x n -> its lower factor in place; info: 0, or the order of the
                    // first leading minor that is not positive definite (LAPACK's potrf)
  Lu = 1,           // a: m x n -> L\U in place with partial pivoting; pivots (1-based),
                    // info: 0, or the first zero pivot's index + 1 (getrf)
  Trsm = 2,         // b: n x k -> a^-1 b, a triangular (upper, unit)
  LuSolve = 3,      // b: n x k -> A^-1 b (adjoint: A^T^-1 b) from A's L\U in a and its
                    // pivots (getrs)
  Permutation = 4,  // b: int32, m per matrix <- the row order that k pivots leave 0..m-1
                    // in: (P^T A)[i] = A[b[i]]
  Geqrf = 5,        // a: m x n -> R above, Householder vectors below; b <- min(m, n) taus
  Orgqr = 6,        // a: m x n holding k vectors, b: k taus -> Q's first n columns
  Eigh = 7,         // a: n x n (lower triangle read, destroyed) -> b: eigenvalues
                    // ascending, c: eigenvectors as columns; n <= kEighMax
  Svd = 8,          // a: m x n, m >= n (destroyed) -> b: singular values descending,
                    // d: U (m x n), c: V (n x n); n <= kSvdMax
                    // (Eigh, Svd: info as LAPACK's syevd / gesdd where the input is not
                    // finite, 1 where 40 sweeps did not converge)
  // Eigh and Svd of any order up to kCondensedMax, through a tridiagonal (bidiagonal)
  // form and QR steps (shaders/linalg_condensed.comp), with their operands, plus
  // `scratch`: kCondensedScratch * n reals per matrix. info 1: a QR iteration did not
  // converge. values_only: b alone is written.
  EighTridiagonal = 9,
  SvdBidiagonal = 10,
  Ldl = 11,       // a: n x n (lower read) -> LAPACK's sytf2 'L' (Bunch-Kaufman) in place:
                  // L below, D's 1x1 and 2x2 blocks on and under the diagonal; pivots
                  // (n, 1-based; a 2x2 block's two -(row)); info: first zero block + 1;
                  // b: 2n reals of scratch per matrix
  LdlSolve = 12,  // b: n x k -> A^-1 b from a's Ldl factors and pivots (sytrs 'L')
};

struct LinalgArgs {
  LinalgAlgo algo = LinalgAlgo::Cholesky;
  DType dtype = DType::f32;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  uint64_t pivots = 0;  // int32, min(m, n) per matrix (Permutation: k per matrix)
  uint64_t info = 0;    // int32 per matrix, zeroed by the caller
  int64_t m = 0, n = 0, k = 0, batch = 0;
  bool upper = false, unit = false;  // Trsm
  bool adjoint = false;              // LuSolve
  bool values_only = false;          // EighTridiagonal, SvdBidiagonal
  uint64_t scratch = 0;              // EighTridiagonal, SvdBidiagonal
  // The matrices (a, b but for Eigh and Svd's values, c, d) hold complex numbers of dtype's
  // precision, (re, im) pairs (shaders/linalg_complex.comp): for the algorithms
  // complex_algo() names. LuSolve's adjoint is then A^H.
  bool complex = false;
};

// Whether `algo` has a complex kernel: Lu, LuSolve, Trsm, Geqrf, Orgqr, and the Jacobi
// Eigh and Svd.
bool complex_algo(LinalgAlgo algo);

// The orders the Jacobi kernels take, and the condensed forms (shaders/linalg_push.h
// says why); the condensed forms' scratch, in reals per order per matrix.
extern const int64_t kEighMax, kSvdMax, kCondensedMax, kCondensedScratch;

bool linalg_supported(Device& dev, DType t);

// Whether the kernels of `algo` take an m x n operand (the solves: an order-n system) on
// this device: eigh and SVD up to kCondensedMax; and where the driver limits an
// invocation's loop iterations (DeviceInfo::loop_iteration_limit: Mesa 22.3's
// lavapipe), only what keeps each thread under it. Eigh and Svd stand for whichever
// kernel their size picks (Jacobi or the condensed form).
bool linalg_fits(Device& dev, LinalgAlgo algo, int64_t m, int64_t n);

// Whether the SVD of an m x n operand runs as Jacobi (Svd) rather than through the
// condensed form (SvdBidiagonal): up to kSvdMax columns, and where the driver limits
// loop iterations, only while Jacobi's sweeps stay under it.
bool svd_by_jacobi(Device& dev, int64_t m, int64_t n);
// The same for the eigendecomposition of order n: Eigh rather than EighTridiagonal.
bool eigh_by_jacobi(Device& dev, int64_t n);

void linalg(Device& dev, const LinalgArgs& args);

}  // namespace vkml::ops
