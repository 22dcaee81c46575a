// Rearrangements built from views and native copies / adds: channel_shuffle,
// pixel_shuffle / pixel_unshuffle and unfold_backward (the gradient of Tensor.unfold's
// sliding windows).
#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/pixel_shuffle_native.h>
#include <ATen/ops/pixel_unshuffle_native.h>
#include <torch/library.h>

#include <vector>

#include "aten/op_helpers.h"

namespace vkml_aten {
namespace {

at::Tensor vk_channel_shuffle(const at::Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2,
              "channel_shuffle expects input to have at least 3 dimensions, but "
              "got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  int64_t c = self.size(1);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c,
              " channels and ", groups, " groups.");
  int64_t rest = 1;
  for (int64_t d = 2; d < self.dim(); ++d) rest *= self.size(d);
  at::Tensor grouped = self.reshape({self.size(0), groups, c / groups, rest});
  return in_layout_of(grouped.transpose(1, 2).contiguous().view(self.sizes()), self);
}
at::Tensor& channel_shuffle_out(const at::Tensor& self, int64_t groups, at::Tensor& out) {
  return write_out(out, vk_channel_shuffle(self, groups));
}

// PyTorch's composite rearrangement (its checks and messages are the CPU's), in the
// input's layout as the CPU's and CUDA's kernels give it: channels-last stays so.
at::Tensor vk_pixel_shuffle(const at::Tensor& self, int64_t upscale_factor) {
  return in_layout_of(at::native::math_pixel_shuffle(self, upscale_factor), self);
}
at::Tensor& pixel_shuffle_out(const at::Tensor& self, int64_t upscale_factor, at::Tensor& out) {
  return write_out(out, vk_pixel_shuffle(self, upscale_factor));
}
at::Tensor vk_pixel_unshuffle(const at::Tensor& self, int64_t downscale_factor) {
  return in_layout_of(at::native::math_pixel_unshuffle(self, downscale_factor), self);
}
at::Tensor& pixel_unshuffle_out(const at::Tensor& self, int64_t downscale_factor, at::Tensor& out) {
  return write_out(out, vk_pixel_unshuffle(self, downscale_factor));
}

// Window w of size `size` covers input positions w * step + k: for each offset k the
// positions are distinct, so one strided view add per k accumulates overlaps.
at::Tensor vk_unfold_backward(const at::Tensor& grad_in, at::IntArrayRef input_sizes, int64_t dim,
                              int64_t size, int64_t step) {
  int64_t d = at::maybe_wrap_dim(dim, int64_t(input_sizes.size()));
  TORCH_CHECK(step > 0, "unfold_backward: step must be positive, got ", step);
  at::Tensor grad = at::zeros(input_sizes, grad_in.options());
  int64_t windows = input_sizes.empty() ? 1 : grad_in.size(d);
  if (grad.numel() == 0 || windows == 0) return grad;
  if (input_sizes.empty()) return grad_in.reshape({}).clone();
  for (int64_t k = 0; k < size; ++k) {
    at::Tensor dst = grad.narrow(d, k, (windows - 1) * step + 1).slice(d, 0, std::nullopt, step);
    dst.add_(grad_in.select(-1, k));
  }
  return grad;
}
at::Tensor& unfold_backward_out(const at::Tensor& grad_in, at::IntArrayRef input_sizes, int64_t dim,
                                int64_t size, int64_t step, at::Tensor& out) {
  return write_out(out, vk_unfold_backward(grad_in, input_sizes, dim, size, step));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("channel_shuffle", TORCH_FN(vk_channel_shuffle));
  m.impl("channel_shuffle.out", TORCH_FN(channel_shuffle_out));
  m.impl("pixel_shuffle", TORCH_FN(vk_pixel_shuffle));
  m.impl("pixel_shuffle.out", TORCH_FN(pixel_shuffle_out));
  m.impl("pixel_unshuffle", TORCH_FN(vk_pixel_unshuffle));
  m.impl("pixel_unshuffle.out", TORCH_FN(pixel_unshuffle_out));
  m.impl("unfold_backward", TORCH_FN(vk_unfold_backward));
  m.impl("unfold_backward.out", TORCH_FN(unfold_backward_out));
}

}  // namespace vkml_aten
