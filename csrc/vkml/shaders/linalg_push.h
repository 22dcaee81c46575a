// The push constants of shaders/linalg.comp, written once for its launcher
// (vkml/ops/linalg.cpp, C++) and the kernel (GLSL): the algorithms (specialization
// constant 0) and their flags.
#ifndef VKML_LINALG_PUSH_H
#define VKML_LINALG_PUSH_H

#include "push_block.h"

// Algorithms. Matrices are row-major and contiguous, one after another.
#define LINALG_CHOLESKY 0  // a (n x n) -> its lower factor in place; info
#define LINALG_LU 1        // a (m x n) -> L\U in place, partial pivoting; pivots, info
#define LINALG_TRSM 2      // b (n x k) -> a^-1 b, a triangular (flags)
#define LINALG_LU_SOLVE 3  // b (n x k) -> A^-1 b from A's L\U in a and pivots
#define LINALG_PERMUTATION 4  // b (int32, m) <- the row order k pivots give 0..m-1
#define LINALG_GEQRF 5  // a (m x n) -> R and Householder vectors in place; b <- k taus
#define LINALG_ORGQR 6  // a (m x n) with k vectors, b (k taus) -> Q's first n columns
#define LINALG_EIGH 7   // a (n x n, lower triangle read) -> b: eigenvalues, c: vectors
#define LINALG_SVD 8    // a (m x n, m >= n) -> b: singular values, d: U, c: V
                        // (info: LAPACK's codes for non-finite input, 1 for no
                        // convergence)
// linalg_condensed.comp: EIGH and SVD of any order up to LINALG_CONDENSED_MAX, with the
// same operands and results, and a scratch of LINALG_CONDENSED_SCRATCH reals per order
// per matrix.
#define LINALG_EIGH_TRIDIAGONAL 9
#define LINALG_SVD_BIDIAGONAL 10
// linalg.comp again:
#define LINALG_LDL 11        // a (n x n, lower read) -> L\D in place (Bunch-Kaufman, sytf2
                             // 'L'); pivots as LAPACK's; info: first zero D block; b: 2n
                             // reals of scratch per matrix
#define LINALG_LDL_SOLVE 12  // b (n x k) -> A^-1 b from a's L\D and pivots (sytrs 'L')

// The largest orders the Jacobi kernels EIGH and SVD take (the condensed forms take the
// orders past them): a Jacobi sweep is n^2 / 2 rotations of a few workgroup barriers
// each, and the kernels sort n values in shared memory.
#define LINALG_EIGH_MAX 48
#define LINALG_SVD_MAX 32
// The condensed forms take O(n) barriers (about 10 a column); 4096 bounds one
// workgroup's O(n^3) work.
#define LINALG_CONDENSED_MAX 4096
#define LINALG_CONDENSED_SCRATCH 16

// flags
#define LINALG_UPPER 1u  // TRSM: a is upper triangular (else lower)
#define LINALG_UNIT 2u     // TRSM: a's diagonal is taken as ones
#define LINALG_ADJOINT 4u  // LU_SOLVE: solve with A^T
#define LINALG_VALUES_ONLY 8u  // EIGH_TRIDIAGONAL, SVD_BIDIAGONAL: no vectors (c, d unused)

VKML_CONTRACT_BEGIN(linalg_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t a;       // the matrices (factored in place, or the factors)
  uint64_t b;       // right-hand sides, solved in place (TRSM, LU_SOLVE)
  uint64_t pivots;  // int32, min(m, n) per matrix, 1-based as LAPACK's
  uint64_t info;    // int32 per matrix: 0, or LAPACK's info (> 0)
  uint64_t c;       // EIGH, SVD: the eigenvectors / right singular vectors (n x n)
  uint64_t d;       // SVD: the left singular vectors (m x n)
  uint64_t scratch; // EIGH_TRIDIAGONAL, SVD_BIDIAGONAL: LINALG_CONDENSED_SCRATCH * n reals
  uint m;           // rows of a
  uint n;           // columns of a (the order for CHOLESKY, TRSM, LU_SOLVE)
  uint k;           // columns of b
  uint batch;
  uint flags;
  uint pad;  // to the 8-byte multiple C++ rounds the struct to
VKML_PUSH_END(Push, 7 * 8 + 6 * 4)
VKML_CONTRACT_END(linalg_detail)

#endif
