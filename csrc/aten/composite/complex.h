#pragma once
// Complex arithmetic on vkml tensors, composed of float kernels (composite/complex.cpp).
#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace vkml_aten {

// Whether complex_elementwise computes the elementwise op of this code (op_codes.h).
bool complex_op_supported(int code);

// The elementwise op `code` over inputs of which one at least is complex, in `type` (the
// promoted complex dtype), into out when it is defined; `alpha` scales the second operand
// of add / sub. Raises NotImplementedError for other ops.
at::Tensor complex_elementwise(int code, const char* name, const std::vector<at::Tensor>& in,
                               const at::Tensor& out, const std::optional<at::Scalar>& alpha,
                               at::ScalarType type, const at::Device& device);

// a @ b for complex matrices (2-d) or batches of them (3-d), of one complex dtype.
at::Tensor complex_matmul(const at::Tensor& a, const at::Tensor& b);

}  // namespace vkml_aten
