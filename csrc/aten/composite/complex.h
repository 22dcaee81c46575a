#pragma once
// Complex arithmetic on vkml tensors, composed of float kernels (composite/complex.cpp).
#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace vkml_aten {

// Whether complex_elementwise computes the elementwise op of this code (op_codes.h) in
// `type` (complex64 has kernels of its own for the transcendental functions and pow).
bool complex_op_supported(int code, at::ScalarType type);

// The elementwise op `code` over inputs of which one at least is complex, in `type` (the
// promoted complex dtype), into out when it is defined; `alpha` scales the second operand
// of add / sub. Raises NotImplementedError for other ops.
at::Tensor complex_elementwise(int code, const char* name, const std::vector<at::Tensor>& in,
                               const at::Tensor& out, const std::optional<at::Scalar>& alpha,
                               at::ScalarType type, const at::Device& device);

// The product of a tensor's elements along `dim`, pairwise (log2 n rounds of
// multiplies), for the dtypes the product kernel lacks (complex, float64); and a complex
// tensor's running product (a doubling scan, as many rounds).
at::Tensor pairwise_prod(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor complex_cumprod(const at::Tensor& x, int64_t dim);

// a @ b for complex matrices (2-d) or batches of them (3-d), of one complex dtype.
at::Tensor complex_matmul(const at::Tensor& a, const at::Tensor& b);

}  // namespace vkml_aten
