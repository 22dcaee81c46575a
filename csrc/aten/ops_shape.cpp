// Data movement between tensors: cat (stack builds on it).
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// Legacy rule shared with the CPU kernel: 1-D empty tensors are skipped.
bool skipped(const at::Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

at::Tensor& cat_out(const at::ITensorListRef& list, int64_t dim, at::Tensor& out) {
  std::vector<at::Tensor> tensors(list.begin(), list.end());
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  const at::Tensor* ref_t = nullptr;
  for (const auto& t : tensors)
    if (!skipped(t)) {
      ref_t = &t;
      break;
    }
  at::ScalarType dtype = at::native::result_type(list);
  TORCH_CHECK(at::canCast(dtype, out.scalar_type()), "torch.cat(): input types can't be cast to "
              "the desired output type ", out.scalar_type());
  if (!ref_t) {
    at::native::resize_output(out, {0});
    return out;
  }
  int64_t d = at::maybe_wrap_dim(dim, ref_t->dim());
  std::vector<int64_t> shape = ref_t->sizes().vec();
  int64_t total = 0;
  for (const auto& t : tensors) {
    if (skipped(t)) continue;
    TORCH_CHECK(t.dim() == ref_t->dim(), "Tensors must have same number of dimensions: got ",
                ref_t->dim(), " and ", t.dim());
    for (int64_t k = 0; k < t.dim(); ++k)
      TORCH_CHECK(k == d || t.size(k) == ref_t->size(k), "Sizes of tensors must match except in "
                  "dimension ", d, ". Expected size ", ref_t->size(k), " but got size ", t.size(k),
                  " for tensor number in the list.");
    TORCH_CHECK(t.device() == out.device(), "torch.cat(): all input tensors must be on the same "
                "device. Received ", t.device(), " and ", out.device());
    total += t.size(d);
  }
  shape[d] = total;
  for (const auto& t : tensors)
    TORCH_CHECK(!out.is_same(t), "torch.cat(): the output tensor must not alias an input");
  at::native::resize_output(out, shape);
  int64_t offset = 0;
  for (const auto& t : tensors) {
    if (skipped(t) || t.size(d) == 0) continue;
    out.narrow(d, offset, t.size(d)).copy_(t);
    offset += t.size(d);
  }
  return out;
}

at::Tensor cat(const at::ITensorListRef& list, int64_t dim) {
  std::vector<at::Tensor> tensors(list.begin(), list.end());
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  at::Tensor out = at::empty({0}, tensors[0].options().dtype(at::native::result_type(list)));
  return cat_out(list, dim, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
}

}  // namespace vkml_aten
