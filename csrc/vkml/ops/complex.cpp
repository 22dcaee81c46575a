#include "vkml/ops/complex.h"

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/complex_push.h"
#include "vkml/shaders/op_codes.h"

namespace vkml::ops {

bool complex_math_has_op(int op) {
  switch (op) {
    case OP_EXP:
    case OP_EXP2:
    case OP_EXPM1:
    case OP_LOG:
    case OP_LOG2:
    case OP_LOG10:
    case OP_LOG1P:
    case OP_SQRT:
    case OP_RSQRT:
    case OP_RECIPROCAL:
    case OP_SIGMOID:
    case OP_SILU:
    case OP_SINC:
    case OP_SIN:
    case OP_COS:
    case OP_TAN:
    case OP_SINH:
    case OP_COSH:
    case OP_TANH:
    case OP_ASIN:
    case OP_ACOS:
    case OP_ATAN:
    case OP_ASINH:
    case OP_ACOSH:
    case OP_ATANH:
    case OP_POW:
    case OP_DIV:
      return true;
    default:
      return false;
  }
}

void complex_math(Device& dev, const ComplexMath& a) {
  VKML_CHECK_ARG(complex_math_has_op(a.op), "complex_math: no complex kernel for this op");
  if (a.numel == 0) return;
  check_32bit_indexing(a.numel, a.numel - 1, "complex math");
  complex_detail::Push p{};
  p.dst = a.out;
  p.z = a.z;
  p.w = a.w;
  p.numel = uint32_t(a.numel);
  p.flags = a.w ? 0u : COMPLEX_W_SCALAR;
  p.w_re = a.w_scalar[0];
  p.w_im = a.w_scalar[1];
  Access access;
  access.read(span_elems(a.z, a.numel, 8));
  if (a.w) access.read(span_elems(a.w, a.numel, 8));
  access.write(span_elems(a.out, a.numel, 8));
  VkPipeline pipeline = dev.pipelines().get(shaders::complex(DType::f32), {a.op});
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(a.numel), 256, &access);
}

}  // namespace vkml::ops
