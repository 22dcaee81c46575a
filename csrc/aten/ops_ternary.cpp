// Ternary elementwise ops: where, addcmul, addcdiv, lerp.
#include "elementwise_macros.h"
#include "vkml/shaders/op_codes.h"

namespace vkml_aten {
namespace {

const EwOp kWhere{
    .code = OP_WHERE, .name = "where", .result = ResultType::FromWhere, .out_exact = true};
const EwOp kAddcmul{OP_ADDCMUL, "addcmul"};
const EwOp kAddcdiv{OP_ADDCDIV, "addcdiv"};
const EwOp kLerpScalar{OP_LERP_SCALAR, "lerp"};
const EwOp kLerpTensor{OP_LERP_TENSOR, "lerp"};

at::Tensor where(const at::Tensor& cond, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(cond.scalar_type() == at::kBool || cond.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              cond.scalar_type());
  return elementwise(kWhere, {cond, a, b});
}
at::Tensor& where_out(const at::Tensor& cond, const at::Tensor& a, const at::Tensor& b,
                      at::Tensor& out) {
  elementwise(kWhere, {cond, a, b}, out);
  return out;
}

void check_addcdiv(const at::Tensor& t1, const at::Tensor& t2) {
  TORCH_CHECK(
      !(at::isIntegralType(t1.scalar_type(), true) && at::isIntegralType(t2.scalar_type(), true)),
      "Integer division with addcdiv is no longer supported, and in a future release "
      "addcdiv will perform a true division of tensor1 and tensor2.");
}

at::Tensor addcmul(const at::Tensor& a, const at::Tensor& t1, const at::Tensor& t2,
                   const at::Scalar& v) {
  return elementwise(kAddcmul, {a, t1, t2}, {}, {.s2 = v, .fits = ScalarFits::Opmath});
}
at::Tensor& addcmul_(at::Tensor& a, const at::Tensor& t1, const at::Tensor& t2,
                     const at::Scalar& v) {
  elementwise(kAddcmul, {a, t1, t2}, a, {.s2 = v, .fits = ScalarFits::Opmath});
  return a;
}
at::Tensor& addcmul_out(const at::Tensor& a, const at::Tensor& t1, const at::Tensor& t2,
                        const at::Scalar& v, at::Tensor& out) {
  elementwise(kAddcmul, {a, t1, t2}, out, {.s2 = v, .fits = ScalarFits::Opmath});
  return out;
}
at::Tensor addcdiv(const at::Tensor& a, const at::Tensor& t1, const at::Tensor& t2,
                   const at::Scalar& v) {
  check_addcdiv(t1, t2);
  return elementwise(kAddcdiv, {a, t1, t2}, {}, {.s2 = v, .fits = ScalarFits::Opmath});
}
at::Tensor& addcdiv_(at::Tensor& a, const at::Tensor& t1, const at::Tensor& t2,
                     const at::Scalar& v) {
  check_addcdiv(t1, t2);
  elementwise(kAddcdiv, {a, t1, t2}, a, {.s2 = v, .fits = ScalarFits::Opmath});
  return a;
}
at::Tensor& addcdiv_out(const at::Tensor& a, const at::Tensor& t1, const at::Tensor& t2,
                        const at::Scalar& v, at::Tensor& out) {
  check_addcdiv(t1, t2);
  elementwise(kAddcdiv, {a, t1, t2}, out, {.s2 = v, .fits = ScalarFits::Opmath});
  return out;
}

// lerp does not promote: the CPU's checks and words.
void check_lerp(const at::Tensor& a, const at::Tensor& end, const at::Tensor* w = nullptr) {
  TORCH_CHECK(a.scalar_type() == end.scalar_type(), "expected dtype ", a.scalar_type(),
              " for `end` but got dtype ", end.scalar_type());
  TORCH_CHECK(w == nullptr || a.scalar_type() == w->scalar_type(), "expected dtype ",
              a.scalar_type(), " for `weight` but got dtype ", w->scalar_type());
}

at::Tensor lerp_s(const at::Tensor& a, const at::Tensor& end, const at::Scalar& w) {
  check_lerp(a, end);
  return elementwise(kLerpScalar, {a, end}, {}, {.s2 = w, .fits = ScalarFits::Opmath});
}
at::Tensor& lerp_s_(at::Tensor& a, const at::Tensor& end, const at::Scalar& w) {
  check_lerp(a, end);
  elementwise(kLerpScalar, {a, end}, a, {.s2 = w, .fits = ScalarFits::Opmath});
  return a;
}
at::Tensor& lerp_s_out(const at::Tensor& a, const at::Tensor& end, const at::Scalar& w,
                       at::Tensor& out) {
  check_lerp(a, end);
  elementwise(kLerpScalar, {a, end}, out, {.s2 = w, .fits = ScalarFits::Opmath});
  return out;
}
at::Tensor lerp_t(const at::Tensor& a, const at::Tensor& end, const at::Tensor& w) {
  check_lerp(a, end, &w);
  return elementwise(kLerpTensor, {a, end, w});
}
at::Tensor& lerp_t_(at::Tensor& a, const at::Tensor& end, const at::Tensor& w) {
  check_lerp(a, end, &w);
  elementwise(kLerpTensor, {a, end, w}, a);
  return a;
}
at::Tensor& lerp_t_out(const at::Tensor& a, const at::Tensor& end, const at::Tensor& w,
                       at::Tensor& out) {
  check_lerp(a, end, &w);
  elementwise(kLerpTensor, {a, end, w}, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("where.self", TORCH_FN(where));
  m.impl("where.self_out", TORCH_FN(where_out));
  m.impl("addcmul", TORCH_FN(addcmul));
  m.impl("addcmul_", TORCH_FN(addcmul_));
  m.impl("addcmul.out", TORCH_FN(addcmul_out));
  m.impl("addcdiv", TORCH_FN(addcdiv));
  m.impl("addcdiv_", TORCH_FN(addcdiv_));
  m.impl("addcdiv.out", TORCH_FN(addcdiv_out));
  m.impl("lerp.Scalar", TORCH_FN(lerp_s));
  m.impl("lerp_.Scalar", TORCH_FN(lerp_s_));
  m.impl("lerp.Scalar_out", TORCH_FN(lerp_s_out));
  m.impl("lerp.Tensor", TORCH_FN(lerp_t));
  m.impl("lerp_.Tensor", TORCH_FN(lerp_t_));
  m.impl("lerp.Tensor_out", TORCH_FN(lerp_t_out));
}

}  // namespace vkml_aten
