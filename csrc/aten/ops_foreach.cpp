// _foreach_* ops, which optimizers call on this device by default (foreach is
// the default for PrivateUse1 in torch.optim). Each runs ATen's reference loop
// over our per-tensor kernels inside an ElementwiseBatchScope, which turns the
// loop's elementwise kernels into one dispatch per list (see
// vkml/ops/elementwise_batch.h): ATen's semantics, one launch.
#include <ATen/ops/_foreach_abs_native.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_clamp_max_native.h>
#include <ATen/ops/_foreach_clamp_min_native.h>
#include <ATen/ops/_foreach_copy_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_exp_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_maximum_native.h>
#include <ATen/ops/_foreach_minimum_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_neg_native.h>
#include <ATen/ops/_foreach_pow_native.h>
#include <ATen/ops/_foreach_reciprocal_native.h>
#include <ATen/ops/_foreach_sign_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/_foreach_zero_native.h>
#include <torch/library.h>

#include "vkml/ops/elementwise_batch.h"

using namespace at::native;

namespace {

// `fn` with its elementwise kernels batched into one dispatch per list.
template <class Sig, Sig* fn>
struct Batched;
template <class R, class... Args, R (*fn)(Args...)>
struct Batched<R(Args...), fn> {
  static R call(Args... args) {
    vkml::ops::ElementwiseBatchScope scope;
    if constexpr (std::is_void_v<R>) {
      fn(std::forward<Args>(args)...);
      scope.close();
    } else {
      R result = fn(std::forward<Args>(args)...);
      scope.close();
      return result;
    }
  }
};

}  // namespace

#define VKML_BATCHED(fn) TORCH_FN((&Batched<decltype(fn), fn>::call))

// Registers the functional and in-place forms of one overload.
#define VKML_FOREACH(op, overload, fn)                   \
  m.impl("_foreach_" op "." overload, VKML_BATCHED(fn)); \
  m.impl("_foreach_" op "_." overload, VKML_BATCHED(fn##_))
#define VKML_FOREACH_UNARY(op, fn)          \
  m.impl("_foreach_" op, VKML_BATCHED(fn)); \
  m.impl("_foreach_" op "_", VKML_BATCHED(fn##_))

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  VKML_FOREACH("add", "Scalar", foreach_tensor_add_scalar_kernel_slow);
  VKML_FOREACH("add", "List", foreach_tensor_add_list_kernel_slow);
  VKML_FOREACH("add", "ScalarList", foreach_tensor_add_scalarlist_kernel_slow);
  VKML_FOREACH("add", "Tensor", foreach_tensor_add_tensor_kernel_slow);
  VKML_FOREACH("sub", "Scalar", foreach_tensor_sub_scalar_kernel_slow);
  VKML_FOREACH("sub", "List", foreach_tensor_sub_list_kernel_slow);
  VKML_FOREACH("sub", "ScalarList", foreach_tensor_sub_scalarlist_kernel_slow);
  VKML_FOREACH("mul", "Scalar", foreach_tensor_mul_scalar_kernel_slow);
  VKML_FOREACH("mul", "List", foreach_tensor_mul_list_kernel_slow);
  VKML_FOREACH("mul", "ScalarList", foreach_tensor_mul_scalarlist_kernel_slow);
  VKML_FOREACH("mul", "Tensor", foreach_tensor_mul_tensor_kernel_slow);
  VKML_FOREACH("div", "Scalar", foreach_tensor_div_scalar_kernel_slow);
  VKML_FOREACH("div", "List", foreach_tensor_div_list_kernel_slow);
  VKML_FOREACH("div", "ScalarList", foreach_tensor_div_scalarlist_kernel_slow);
  VKML_FOREACH("div", "Tensor", foreach_tensor_div_tensor_kernel_slow);
  VKML_FOREACH("addcmul", "Scalar", foreach_tensor_addcmul_scalar_slow);
  VKML_FOREACH("addcmul", "ScalarList", foreach_tensor_addcmul_scalarlist_slow);
  VKML_FOREACH("addcmul", "Tensor", foreach_tensor_addcmul_tensor_slow);
  VKML_FOREACH("addcdiv", "Scalar", foreach_tensor_addcdiv_scalar_slow);
  VKML_FOREACH("addcdiv", "ScalarList", foreach_tensor_addcdiv_scalarlist_slow);
  VKML_FOREACH("addcdiv", "Tensor", foreach_tensor_addcdiv_tensor_slow);
  VKML_FOREACH("lerp", "List", foreach_tensor_ternary_lerp_slow);
  VKML_FOREACH("lerp", "Scalar", foreach_tensor_lerp_list_kernel_slow);
  VKML_FOREACH("lerp", "ScalarList", foreach_tensor_lerp_scalarlist_kernel_slow);
  VKML_FOREACH("clamp_min", "Scalar", foreach_tensor_clamp_min_scalar_kernel_slow);
  VKML_FOREACH("clamp_min", "List", foreach_tensor_clamp_min_list_kernel_slow);
  VKML_FOREACH("clamp_min", "ScalarList", foreach_tensor_clamp_min_scalarlist_kernel_slow);
  VKML_FOREACH("clamp_max", "Scalar", foreach_tensor_clamp_max_scalar_kernel_slow);
  VKML_FOREACH("clamp_max", "List", foreach_tensor_clamp_max_list_kernel_slow);
  VKML_FOREACH("clamp_max", "ScalarList", foreach_tensor_clamp_max_scalarlist_kernel_slow);
  VKML_FOREACH("maximum", "Scalar", foreach_tensor_clamp_min_scalar_kernel_slow);
  VKML_FOREACH("maximum", "List", foreach_tensor_clamp_min_list_kernel_slow);
  VKML_FOREACH("maximum", "ScalarList", foreach_tensor_clamp_min_scalarlist_kernel_slow);
  VKML_FOREACH("minimum", "Scalar", foreach_tensor_clamp_max_scalar_kernel_slow);
  VKML_FOREACH("minimum", "List", foreach_tensor_clamp_max_list_kernel_slow);
  VKML_FOREACH("minimum", "ScalarList", foreach_tensor_clamp_max_scalarlist_kernel_slow);
  VKML_FOREACH("pow", "List", foreach_tensor_pow_list_kernel_slow);
  VKML_FOREACH("pow", "Scalar", foreach_tensor_pow_scalar_kernel_slow);
  VKML_FOREACH("pow", "ScalarList", foreach_tensor_pow_scalarlist_kernel_slow);
  m.impl("_foreach_pow.ScalarAndTensor", TORCH_FN(foreach_scalar_pow_list_kernel_slow));
  VKML_FOREACH_UNARY("sqrt", foreach_tensor_sqrt_slow);
  VKML_FOREACH_UNARY("neg", foreach_tensor_neg_slow);
  VKML_FOREACH_UNARY("reciprocal", foreach_tensor_reciprocal_slow);
  VKML_FOREACH_UNARY("sign", foreach_tensor_sign_slow);
  VKML_FOREACH_UNARY("abs", foreach_tensor_abs_slow);
  VKML_FOREACH_UNARY("exp", foreach_tensor_exp_slow);
  m.impl("_foreach_zero_", VKML_BATCHED(foreach_tensor_zero_slow_));
  m.impl("_foreach_copy_", TORCH_FN(foreach_tensor_copy_list_kernel_slow_));
}
