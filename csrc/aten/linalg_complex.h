#pragma once
// Complex matrices through their real embedding, where what is asked of them survives
// it: A = X + iY as the real [[X, -Y], [Y, X]], twice A's size, on the real kernels.
// The embedding's inverse is that of A, embedded the same way; a Hermitian A's embedding
// is symmetric, with each of A's eigenvalues twice; every singular value of A appears
// twice among the embedding's. Factors (LU, Cholesky, QR), eigenvectors and singular
// vectors do not carry over: those stay on the counted CPU route. The work is 8 times a
// complex kernel's, on the device rather than the host.
#include <ATen/ATen.h>

#include "vkml/ops/linalg.h"

namespace vkml_aten::linalg {

// Whether complex A's embedding is of a dtype the device's kernels take and a size
// `algo` takes on it.
bool embeddable(const at::Tensor& A, vkml::ops::LinalgAlgo algo);

// [[X, -Y], [Y, X]] of A's matrices (..., m, n) -> (..., 2m, 2n), conj and neg bits
// resolved.
at::Tensor real_embedding(const at::Tensor& A);

// A's inverse from its embedding's, and the embedding's info as A's: its first zero
// pivot's column of A (LAPACK's complex factorization may find another first).
at::Tensor complex_from_embedded(const at::Tensor& E, int64_t n);
at::Tensor info_of_embedded(const at::Tensor& info, int64_t n);

// The Hermitian matrix that the `upper` or lower triangle of A describes (the imaginary
// parts of its diagonal ignored, as LAPACK's heevd ignores them).
at::Tensor hermitian_from_triangle(const at::Tensor& A, bool upper);

// X with A X = B: an LU solve of A's embedding, with B's real and imaginary parts stacked
// as the right-hand side. The solution only (no LU for a backward to reuse).
at::Tensor solve_by_embedding(const at::Tensor& A, const at::Tensor& B);
// The same for the triangle of A that `upper` names (unit diagonal if `unit`).
at::Tensor triangular_by_embedding(const at::Tensor& A, const at::Tensor& B, bool upper, bool unit);

// The same blocks interleaved: entry (i, j) of A as rows 2i, 2i + 1 and columns 2j, 2j + 1.
// A lower-triangular A with a real diagonal embeds to a lower-triangular matrix that way,
// so the Cholesky factor of a Hermitian A's interleaved embedding is A's factor embedded.
at::Tensor interleaved_embedding(const at::Tensor& A);
// A from its interleaved embedding (the first column of each block), and the embedding's
// failing leading minor as A's.
at::Tensor complex_from_interleaved(const at::Tensor& E);
at::Tensor info_of_interleaved(const at::Tensor& info);

// Every other value along the last dim: one of each pair the embedding doubles.
at::Tensor one_of_each_pair(const at::Tensor& values);

}  // namespace vkml_aten::linalg
