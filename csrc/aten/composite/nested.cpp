// Strided nested tensors (torch.nested.nested_tensor's default layout) on vkml. A strided
// nested tensor is a buffer (an ordinary vkml tensor) with per-component sizes, strides and
// offsets held on the CPU. ATen's kernels for them are written once for every device: they
// reshape the metadata and call ordinary ops on the buffer or on views of it, which then
// run as vkml kernels. PyTorch registers them for NestedTensorCPU/CUDA/HPU only; here they
// are registered for NestedTensorPrivateUse1, the kernels whose schema lists CUDA or HPU
// beside the CPU (so nothing that reads a buffer on the host), plus bmm, whose CPU kernel
// is one mm per component. Left out, as on CUDA: sum over dims (a CPU loop there) and the
// CPU's softmax-with-dropout. to_padded_tensor, _native_multi_head_attention and
// _transformer_encoder_layer_fwd are vkml's own (composite/transformer.cpp).

#include <ATen/ops/_nested_from_padded_and_nested_example_native.h>
#include <ATen/ops/_nested_from_padded_native.h>
#include <ATen/ops/_nested_select_backward_native.h>
#include <ATen/ops/_nested_tensor_size_native.h>
#include <ATen/ops/_nested_tensor_storage_offsets_native.h>
#include <ATen/ops/_nested_tensor_strides_native.h>
#include <ATen/ops/_nested_view_from_buffer_native.h>
#include <ATen/ops/_safe_softmax_native.h>
#include <ATen/ops/_softmax_backward_data_native.h>
#include <ATen/ops/_softmax_native.h>
#include <ATen/ops/_to_copy_native.h>
#include <ATen/ops/abs_native.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/alias_native.h>
#include <ATen/ops/all_native.h>
#include <ATen/ops/bmm_native.h>
#include <ATen/ops/cat_native.h>
#include <ATen/ops/chunk_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/cos_native.h>
#include <ATen/ops/detach_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/embedding_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/eq_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/ge_native.h>
#include <ATen/ops/gelu_backward_native.h>
#include <ATen/ops/gelu_native.h>
#include <ATen/ops/gt_native.h>
#include <ATen/ops/is_same_size_native.h>
#include <ATen/ops/isinf_native.h>
#include <ATen/ops/isnan_native.h>
#include <ATen/ops/isneginf_native.h>
#include <ATen/ops/isposinf_native.h>
#include <ATen/ops/linear_backward_native.h>
#include <ATen/ops/linear_native.h>
#include <ATen/ops/logical_not_native.h>
#include <ATen/ops/masked_fill_native.h>
#include <ATen/ops/matmul_backward_native.h>
#include <ATen/ops/matmul_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/narrow_native.h>
#include <ATen/ops/native_dropout_backward_native.h>
#include <ATen/ops/native_dropout_native.h>
#include <ATen/ops/native_layer_norm_backward_native.h>
#include <ATen/ops/native_layer_norm_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/normal_native.h>
#include <ATen/ops/ones_like_native.h>
#include <ATen/ops/relu_native.h>
#include <ATen/ops/select_native.h>
#include <ATen/ops/sgn_native.h>
#include <ATen/ops/silu_backward_native.h>
#include <ATen/ops/silu_native.h>
#include <ATen/ops/sin_native.h>
#include <ATen/ops/split_with_sizes_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/squeeze_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/threshold_backward_native.h>
#include <ATen/ops/transpose_native.h>
#include <ATen/ops/unbind_native.h>
#include <ATen/ops/unsqueeze_native.h>
#include <ATen/ops/value_selecting_reduction_backward_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/where_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

namespace vkml_aten {

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_nested_from_padded_and_nested_example",
         TORCH_FN(at::native::NestedTensor_from_padded_and_nested_example));
  m.impl("_nested_select_backward", TORCH_FN(at::native::_nested_select_backward_symint));
  m.impl("_nested_tensor_size", TORCH_FN(at::native::_nested_tensor_size));
  m.impl("_nested_tensor_storage_offsets", TORCH_FN(at::native::_nested_tensor_storage_offsets));
  m.impl("_nested_tensor_strides", TORCH_FN(at::native::_nested_tensor_strides));
  m.impl("_safe_softmax", TORCH_FN(at::native::_safe_softmax));
  m.impl("_softmax", TORCH_FN(at::native::softmax_nested));
  m.impl("_softmax_backward_data", TORCH_FN(at::native::nested_softmax_backward));
  m.impl("_to_copy", TORCH_FN(at::native::_to_copy_nested));
  m.impl("abs", TORCH_FN(at::native::NestedTensor_abs));
  m.impl("abs_", TORCH_FN(at::native::NestedTensor_abs_));
  m.impl("add.Tensor", TORCH_FN(at::native::NestedTensor_add_Tensor));
  m.impl("add_.Tensor", TORCH_FN(at::native::NestedTensor_add__Tensor));
  m.impl("alias", TORCH_FN(at::native::alias_nested));
  m.impl("all.dim", TORCH_FN(at::native::NestedTensor_all));
  m.impl("cat", TORCH_FN(at::native::cat_nested));
  m.impl("chunk", TORCH_FN(at::native::chunk_nested_tensor));
  m.impl("clone", TORCH_FN(at::native::clone_nested));
  m.impl("copy_", TORCH_FN(at::native::copy_nested_));
  m.impl("cos", TORCH_FN(at::native::NestedTensor_cos));
  m.impl("detach", TORCH_FN(at::native::detach));
  m.impl("div.Scalar", TORCH_FN(at::native::NestedTensor_div_Scalar));
  m.impl("div.Tensor", TORCH_FN(at::native::NestedTensor_div_Tensor));
  m.impl("embedding", TORCH_FN(at::native::NestedTensor_embedding));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_nested));
  m.impl("eq.Scalar", TORCH_FN(at::native::eq_scalar_nested));
  m.impl("eq.Tensor", TORCH_FN(at::native::eq_tensor_nested));
  m.impl("fill_.Scalar", TORCH_FN(static_cast<at::Tensor& (*)(at::Tensor&, const at::Scalar&)>(
                             at::native::fill_nested_)));
  m.impl("fill_.Tensor", TORCH_FN(static_cast<at::Tensor& (*)(at::Tensor&, const at::Tensor&)>(
                             at::native::fill_nested_)));
  m.impl("ge.Scalar", TORCH_FN(at::native::ge_scalar_nested));
  m.impl("gelu", TORCH_FN(at::native::NestedTensor_gelu));
  m.impl("gelu_", TORCH_FN(at::native::NestedTensor_gelu_));
  m.impl("gelu_backward", TORCH_FN(at::native::gelu_backwards_nested));
  m.impl("gt.Scalar", TORCH_FN(at::native::gt_scalar_nested));
  m.impl("is_same_size", TORCH_FN(at::native::nested_is_same_size));
  m.impl("isinf", TORCH_FN(at::native::NestedTensor_isinf));
  m.impl("isnan", TORCH_FN(at::native::NestedTensor_isnan));
  m.impl("isneginf", TORCH_FN(at::native::NestedTensor_isneginf));
  m.impl("isposinf", TORCH_FN(at::native::NestedTensor_isposinf));
  m.impl("linear", TORCH_FN(at::native::nested_linear));
  m.impl("linear_backward", TORCH_FN(at::native::nested_linear_backward));
  m.impl("logical_not", TORCH_FN(at::native::NestedTensor_logical_not));
  m.impl("logical_not_", TORCH_FN(at::native::NestedTensor_logical_not_));
  m.impl("masked_fill.Scalar", TORCH_FN(at::native::NestedTensor_masked_fill));
  m.impl("matmul", TORCH_FN(at::native::matmul_nested));
  m.impl("matmul.out", TORCH_FN(at::native::matmul_out_nested));
  m.impl("matmul_backward", TORCH_FN(at::native::matmul_backward_nested));
  m.impl("mul.Scalar", TORCH_FN(at::native::NestedTensor_mul_Scalar));
  m.impl("mul.Tensor", TORCH_FN(at::native::NestedTensor_mul_Tensor));
  m.impl("mul_.Scalar", TORCH_FN(at::native::NestedTensor_mul__Scalar));
  m.impl("mul_.Tensor", TORCH_FN(at::native::NestedTensor_mul__Tensor));
  m.impl("narrow", TORCH_FN(at::native::narrow_nested_symint));
  m.impl("native_dropout", TORCH_FN(at::native::native_dropout_nested));
  m.impl("native_dropout_backward", TORCH_FN(at::native::native_dropout_backward));
  m.impl("native_layer_norm", TORCH_FN(at::native::nested_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(at::native::layer_norm_backward_nested));
  m.impl("neg", TORCH_FN(at::native::NestedTensor_neg));
  m.impl("neg_", TORCH_FN(at::native::NestedTensor_neg_));
  m.impl("normal_", TORCH_FN(at::native::normal_nested_));
  m.impl("ones_like", TORCH_FN(at::native::ones_like));
  m.impl("relu", TORCH_FN(at::native::NestedTensor_relu));
  m.impl("relu_", TORCH_FN(at::native::NestedTensor_relu_));
  m.impl("select.int", TORCH_FN(at::native::select_nested));
  m.impl("sgn", TORCH_FN(at::native::NestedTensor_sgn));
  m.impl("sgn_", TORCH_FN(at::native::NestedTensor_sgn_));
  m.impl("silu", TORCH_FN(at::native::NestedTensor_silu));
  m.impl("silu_", TORCH_FN(at::native::NestedTensor_silu_));
  m.impl("silu_backward", TORCH_FN(at::native::silu_backward_nested));
  m.impl("sin", TORCH_FN(at::native::NestedTensor_sin));
  m.impl("split_with_sizes", TORCH_FN(at::native::split_with_sizes_nested));
  m.impl("sqrt", TORCH_FN(at::native::NestedTensor_sqrt));
  m.impl("squeeze", TORCH_FN(at::native::squeeze_nested));
  m.impl("squeeze.dim", TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, int64_t)>(
                            at::native::squeeze_dim_nested)));
  m.impl("squeeze.dims", TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, at::IntArrayRef)>(
                             at::native::squeeze_dim_nested)));
  m.impl("sub.Tensor", TORCH_FN(at::native::NestedTensor_sub_Tensor));
  m.impl("tanh", TORCH_FN(at::native::NestedTensor_tanh));
  m.impl("tanh_", TORCH_FN(at::native::NestedTensor_tanh_));
  m.impl("threshold_backward", TORCH_FN(at::native::threshold_backwards_nested));
  m.impl("transpose.int", TORCH_FN(at::native::transpose_nested));
  m.impl("unbind.int", TORCH_FN(at::native::NestedTensor_unbind));
  m.impl("unsqueeze", TORCH_FN(at::native::unsqueeze_nested));
  m.impl("value_selecting_reduction_backward",
         TORCH_FN(at::native::value_selecting_reduction_backward_nested_symint));
  m.impl("values", TORCH_FN(at::native::values_nested));
  m.impl("view", TORCH_FN(at::native::view_nested));
  m.impl("where.self", TORCH_FN(at::native::NestedTensor_where));
  m.impl("where.self_out", TORCH_FN(at::native::NestedTensor_where_out));
  m.impl("zero_", TORCH_FN(at::native::zero_nested_));
  m.impl("bmm", TORCH_FN(at::native::bmm_nested));
}

// Ops on dense tensors that make nested ones (a view of a buffer, the rows of a padded
// batch): generic in ATen, registered there for the CPU (and CUDA) key only.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_view_from_buffer", TORCH_FN(at::native::_nested_view_from_buffer));
  m.impl("_nested_from_padded", TORCH_FN(at::native::nested_from_padded_generic));
}

}  // namespace vkml_aten
