// im2col / col2im (nn.Unfold / nn.Fold): sliding 2-D windows to columns and back
// (col2im as a gather), in float32, float16 and bfloat16, and float64 where the device
// has float64 arithmetic.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "op_helpers.h"
#include "vkml/ops/im2col.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

vkml::ops::Im2colShape window_shape(const char* op, int64_t H, int64_t W, at::IntArrayRef k,
                                    at::IntArrayRef dil, at::IntArrayRef pad,
                                    at::IntArrayRef stride) {
  TORCH_CHECK(k.size() == 2 && dil.size() == 2 && pad.size() == 2 && stride.size() == 2, op,
              ": kernel_size, dilation, padding and stride must have 2 elements each");
  TORCH_CHECK(k[0] > 0 && k[1] > 0,
              "kernel size should be greater than zero, but got kernel_height: ", k[0],
              " kernel_width: ", k[1]);
  TORCH_CHECK(dil[0] > 0 && dil[1] > 0,
              "dilation should be greater than zero, but got "
              "dilation_height: ",
              dil[0], " dilation_width: ", dil[1]);
  TORCH_CHECK(pad[0] >= 0 && pad[1] >= 0,
              "padding should be non-negative, but got pad_height: ", pad[0],
              " pad_width: ", pad[1]);
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0,
              "stride should be greater than zero, but got "
              "stride_height: ",
              stride[0], " stride_width: ", stride[1]);
  vkml::ops::Im2colShape s;
  s.H = H;
  s.W = W;
  s.kh = k[0];
  s.kw = k[1];
  s.dh = dil[0];
  s.dw = dil[1];
  s.ph = pad[0];
  s.pw = pad[1];
  s.sh = stride[0];
  s.sw = stride[1];
  s.oh = (H + 2 * s.ph - (s.dh * (s.kh - 1) + 1)) / s.sh + 1;
  s.ow = (W + 2 * s.pw - (s.dw * (s.kw - 1) + 1)) / s.sw + 1;
  TORCH_CHECK(s.oh >= 1 && s.ow >= 1, "Given input with spatial size (", H, ", ", W,
              "), kernel_size=(", k[0], ", ", k[1], "), dilation=(", dil[0], ", ", dil[1],
              "), padding=(", pad[0], ", ", pad[1],
              "), calculated shape of the array of sliding "
              "blocks as (",
              s.oh, ", ", s.ow, "), but its components must be at least one.");
  return s;
}

at::Tensor vk_im2col(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef dil,
                     at::IntArrayRef pad, at::IntArrayRef stride) {
  TORCH_CHECK((self.dim() == 3 && self.size(0) > 0) || (self.dim() == 4 && self.size(1) > 0),
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
              "non-zero dimensions for input, but got: ",
              self.sizes());
  TORCH_CHECK(self.size(-1) > 0 && self.size(-2) > 0,
              "Expected non-zero spatial dimensions "
              "for input, but got: ",
              self.sizes());
  bool batched = self.dim() == 4;
  at::Tensor x = (batched ? self : self.unsqueeze(0)).contiguous();
  auto s = window_shape("im2col", x.size(2), x.size(3), k, dil, pad, stride);
  s.planes = x.size(0) * x.size(1);
  if (!float_kernel_dtype(x)) {
    // Other dtypes (bool, integers, complex): the windows as a strided view of the padded
    // input, copied into place (it only moves elements).
    at::Tensor p = at::constant_pad_nd(x, {s.pw, s.pw, s.ph, s.ph}, 0).contiguous();
    const int64_t C = p.size(1), Hp = p.size(2), Wp = p.size(3);
    at::Tensor windows = p.as_strided({p.size(0), C, s.kh, s.kw, s.oh, s.ow},
                                      {C * Hp * Wp, Hp * Wp, s.dh * Wp, s.dw, s.sh * Wp, s.sw});
    at::Tensor out = windows.reshape({p.size(0), C * s.kh * s.kw, s.oh * s.ow}).contiguous();
    return batched ? out : out.squeeze(0);
  }
  at::Tensor out = at::empty({x.size(0), x.size(1) * s.kh * s.kw, s.oh * s.ow}, x.options());
  guarded(
      [&] { vkml::ops::im2col(vkml_device(x), to_vkml(x.scalar_type()), addr(x), addr(out), s); });
  return batched ? out : out.squeeze(0);
}
at::Tensor& im2col_out(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef dil,
                       at::IntArrayRef pad, at::IntArrayRef stride, at::Tensor& out) {
  return write_out(out, vk_im2col(self, k, dil, pad, stride));
}

at::Tensor vk_col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef k,
                     at::IntArrayRef dil, at::IntArrayRef pad, at::IntArrayRef stride) {
  TORCH_CHECK_NOT_IMPLEMENTED(float_kernel_dtype(self),
                              "col2im on vkml supports float32, float16, bfloat16 and float64 "
                              "(on a device with float64 arithmetic), got ",
                              self.scalar_type());
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ",
              output_size.size());
  TORCH_CHECK((self.dim() == 2 && self.size(0) != 0 && self.size(1) != 0) ||
                  (self.dim() == 3 && self.size(1) != 0 && self.size(2) != 0),
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
              "non-zero dimensions for input, but got: ",
              self.sizes());
  bool batched = self.dim() == 3;
  at::Tensor x = (batched ? self : self.unsqueeze(0)).contiguous();
  auto s = window_shape("col2im", output_size[0], output_size[1], k, dil, pad, stride);
  int64_t kk = s.kh * s.kw;
  TORCH_CHECK(x.size(1) % kk == 0,
              "Expected size of input's dimension 1 to be divisible by the "
              "product of kernel_size, but got input.size(1)=",
              x.size(1), " and kernel_size=(", k[0], ", ", k[1], ")");
  TORCH_CHECK(x.size(2) == s.oh * s.ow, "Given output_size=(", output_size[0], ", ", output_size[1],
              "), kernel_size=(", k[0], ", ", k[1], "), dilation=(", dil[0], ", ", dil[1],
              "), padding=(", pad[0], ", ", pad[1], "), stride=(", stride[0], ", ", stride[1],
              "), expected size of input's dimension 2 to match the calculated number "
              "of sliding blocks ",
              s.oh, " * ", s.ow, " = ", s.oh * s.ow, ", but got input.size(2)=", x.size(2), ".");
  int64_t C = x.size(1) / kk;
  s.planes = x.size(0) * C;
  at::Tensor out = at::empty({x.size(0), C, s.H, s.W}, x.options());
  guarded(
      [&] { vkml::ops::col2im(vkml_device(x), to_vkml(x.scalar_type()), addr(x), addr(out), s); });
  return batched ? out : out.squeeze(0);
}
at::Tensor& col2im_out(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef k,
                       at::IntArrayRef dil, at::IntArrayRef pad, at::IntArrayRef stride,
                       at::Tensor& out) {
  return write_out(out, vk_col2im(self, output_size, k, dil, pad, stride));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", TORCH_FN(vk_im2col));
  m.impl("im2col.out", TORCH_FN(im2col_out));
  m.impl("col2im", TORCH_FN(vk_col2im));
  m.impl("col2im.out", TORCH_FN(col2im_out));
}

}  // namespace vkml_aten
