#pragma once
// Complex64 math kernels (shaders/complex.comp): the transcendental functions, pow
// and a scaled division, over contiguous operands. The arithmetic that composes from
// float kernels on the (re, im) pairs stays in the adapter (aten/composite/complex.cpp).
#include <cstdint>

#include "vkml/runtime/device.h"

namespace vkml::ops {

struct ComplexMath {
  int op = 0;        // an op code of shaders/op_codes.h (complex_math_has_op)
  uint64_t out = 0;  // complex64, numel elements, contiguous
  uint64_t z = 0;    // complex64, like out
  uint64_t w = 0;    // the second operand of pow / div, like out; 0: w_scalar
  float w_scalar[2] = {0, 0};
  int64_t numel = 0;
};

bool complex_math_has_op(int op);
void complex_math(Device& dev, const ComplexMath& args);

}  // namespace vkml::ops
