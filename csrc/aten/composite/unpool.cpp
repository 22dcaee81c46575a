// max_unpool2d / max_unpool3d (max_unpool1d is the 2-d op on a unit dim): the
// values scatter to their flat indices within each plane of a zeroed output.
// The index kernel's range check raises for an index outside the plane; the
// backward is a gather (autograd's max_pool_double_backward).
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <vector>

#include "aten/op_helpers.h"

namespace vkml_aten {
namespace {

at::Tensor unpool(const char* op, const at::Tensor& self, const at::Tensor& indices,
                  at::IntArrayRef output_size) {
  size_t k = output_size.size();
  TORCH_CHECK(indices.scalar_type() == at::kLong, op,
              ": elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(self.dim() == int64_t(k + 1) || self.dim() == int64_t(k + 2), op, ": Input to ", op,
              " should be a ", k + 1, "d or ", k + 2, "d Tensor, but got a tensor with ",
              self.dim(), " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(), op,
              ": Expected shape of indices to be same as that of the input tensor (", self.sizes(),
              ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0, op,
                ": Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", d, " being empty.");
  }
  std::vector<int64_t> out_sizes(self.sizes().begin(), self.sizes().end() - int64_t(k));
  int64_t plane_out = 1;
  for (int64_t s : output_size) {
    TORCH_CHECK(s >= 0, op, ": output_size must be non-negative, got ", output_size);
    out_sizes.push_back(s);
    plane_out *= s;
  }
  at::Tensor out = at::zeros(out_sizes, self.options());
  if (self.scalar_type() == at::kBFloat16) {  // no bfloat16 scatter: an exact round trip
    return unpool(op, self.to(at::kFloat), indices, output_size).to(at::kBFloat16);
  }
  int64_t planes = 1;
  for (int64_t d = 0; d < self.dim() - int64_t(k); ++d) planes *= self.size(d);
  if (out.numel() == 0 || self.numel() == 0) return out;
  TORCH_CHECK(plane_out > 0, op, ": Found an invalid max index for an empty output plane");
  out.view({planes, plane_out})
      .scatter_(1, indices.reshape({planes, -1}), self.reshape({planes, -1}));
  return out;
}

at::Tensor vk_unpool2d(const at::Tensor& self, const at::Tensor& indices,
                       at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2,
              "There should be exactly two elements (height, width) in "
              "output_size, but got ",
              output_size.size(), " elements.");
  return in_layout_of(unpool("max_unpool2d", self, indices, output_size), self);
}
at::Tensor& unpool2d_out(const at::Tensor& self, const at::Tensor& indices,
                         at::IntArrayRef output_size, at::Tensor& out) {
  return write_out(out, vk_unpool2d(self, indices, output_size));
}

at::Tensor vk_unpool3d(const at::Tensor& self, const at::Tensor& indices,
                       at::IntArrayRef output_size, at::IntArrayRef stride,
                       at::IntArrayRef padding) {
  TORCH_CHECK(output_size.size() == 3,
              "There should be exactly three elements (depth, height, "
              "width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(stride.size() == 3,
              "There should be exactly three elements (depth, height, width) "
              "in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3,
              "There should be exactly three elements (depth, height, "
              "width) in padding, but got: ",
              padding.size(), " elements.");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
              "strides should be greater than zero, but got stride: ", stride);
  return unpool("max_unpool3d", self, indices, output_size);
}
at::Tensor& unpool3d_out(const at::Tensor& self, const at::Tensor& indices,
                         at::IntArrayRef output_size, at::IntArrayRef stride,
                         at::IntArrayRef padding, at::Tensor& out) {
  return write_out(out, vk_unpool3d(self, indices, output_size, stride, padding));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_unpool2d", TORCH_FN(vk_unpool2d));
  m.impl("max_unpool2d.out", TORCH_FN(unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(vk_unpool3d));
  m.impl("max_unpool3d.out", TORCH_FN(unpool3d_out));
}

}  // namespace vkml_aten
