// Bilinear, linear, bicubic, trilinear and antialiased upsampling (+ backward); nearest
// upsampling runs on the remap kernel (ops_remap.cpp).
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "fallback.h"
#include "op_helpers.h"
#include "upsample_float64.h"
#include "vkml/ops/upsample.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using OptD = std::optional<double>;

// -------------------------------------------------------------- bilinear

// PyTorch's area_pixel_compute_scale, in float as the CPU kernel computes it for float
// dtypes, in double for float64.
template <typename T = float>
T pixel_scale(int64_t in, int64_t out, bool align_corners, OptD scale) {
  if (align_corners) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
  return (scale && *scale > 0) ? T(1.0 / *scale) : T(in) / T(out);
}

using vkml::ops::InterpMode;

// uint8 (the CPU's integer rounding rules), and float64 on a device without float64
// arithmetic, take the counted CPU route; so does float64 where a pass's dense weight
// matrix (upsample_float64.h) would pass 4M entries (a long 1-d signal: 16k to 32k
// samples would be 512M), until passes gather their taps instead.
bool cpu_bound(const at::Tensor& t, at::IntArrayRef in_sizes, at::IntArrayRef output_size) {
  if (t.scalar_type() == at::kByte) return true;
  if (t.scalar_type() != at::kDouble) return false;
  if (!vkml_device(t).info().supports_fp64) return true;
  const size_t first = in_sizes.size() - std::min(in_sizes.size(), output_size.size());
  for (size_t d = 0; d < output_size.size() && first + d < in_sizes.size(); ++d)
    if (in_sizes[first + d] * output_size[d] > (int64_t(1) << 22)) return true;
  return false;
}

// float64 resampling, one separable pass per spatial dim (upsample_float64.h).
at::Tensor resample_f64(at::Tensor x, at::IntArrayRef output_size, InterpMode mode,
                        bool align_corners, const std::vector<OptD>& scales) {
  const int64_t first = x.dim() - int64_t(output_size.size());
  for (size_t d = 0; d < output_size.size(); ++d) {
    const int64_t dim = first + int64_t(d);
    const double scale = pixel_scale<double>(x.size(dim), output_size[d], align_corners, scales[d]);
    x = upsample_f64::pass(x, dim, output_size[d], mode, align_corners, scale);
  }
  return x;
}

// Its backward: the passes' adjoints in reverse order.
at::Tensor resample_f64_backward(at::Tensor g, at::IntArrayRef output_size,
                                 at::IntArrayRef input_size, InterpMode mode, bool align_corners,
                                 const std::vector<OptD>& scales) {
  const int64_t first = g.dim() - int64_t(output_size.size());
  for (size_t d = output_size.size(); d-- > 0;) {
    const int64_t dim = first + int64_t(d), in = input_size[dim];
    const double scale = pixel_scale<double>(in, output_size[d], align_corners, scales[d]);
    g = upsample_f64::pass_backward(g, dim, in, mode, align_corners, scale);
  }
  return g;
}

vkml::ops::BilinearShape bilinear_shape(const char* op, at::IntArrayRef in_sizes,
                                        at::IntArrayRef output_size, bool align_corners, OptD sh,
                                        OptD sw) {
  TORCH_CHECK(output_size.size() == 2, op,
              ": it is expected output_size equals to 2, but got size ", output_size.size());
  TORCH_CHECK(in_sizes.size() == 4, op, ": it is expected input_size equals to 4, but got size ",
              in_sizes.size());
  TORCH_CHECK(in_sizes[2] > 0 && in_sizes[3] > 0 && output_size[0] > 0 && output_size[1] > 0, op,
              ": input and output sizes should be greater than 0, but got input (H: ", in_sizes[2],
              ", W: ", in_sizes[3], ") output (H: ", output_size[0], ", W: ", output_size[1], ")");
  vkml::ops::BilinearShape s;
  s.planes = in_sizes[0] * in_sizes[1];
  s.ih = in_sizes[2];
  s.iw = in_sizes[3];
  s.oh = output_size[0];
  s.ow = output_size[1];
  s.scale_h = pixel_scale(s.ih, s.oh, align_corners, sh);
  s.scale_w = pixel_scale(s.iw, s.ow, align_corners, sw);
  s.align_corners = align_corners;
  return s;
}

at::Tensor vk_bilinear(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners,
                       OptD sh, OptD sw) {
  if (cpu_bound(self, self.sizes(), output_size))
    return cpu_route<at::_ops::upsample_bilinear2d>(self, output_size, align_corners, sh, sw);
  if (self.scalar_type() == at::kBFloat16) {
    return vk_bilinear(self.to(at::kFloat), output_size, align_corners, sh, sw).to(at::kBFloat16);
  }
  if (self.scalar_type() != at::kDouble)
    check_float_storage("upsample_bilinear2d", self.scalar_type());
  auto s = bilinear_shape("upsample_bilinear2d", self.sizes(), output_size, align_corners, sh, sw);
  if (self.scalar_type() == at::kDouble) {
    return in_layout_of(
        resample_f64(self, output_size, InterpMode::Linear, align_corners, {sh, sw}), self);
  }
  at::Tensor x = self.contiguous();
  at::Tensor out = at::empty({self.size(0), self.size(1), s.oh, s.ow}, self.options());
  guarded([&] {
    vkml::ops::upsample_bilinear(vkml_device(x), to_vkml(x.scalar_type()), addr(x), addr(out), s);
  });
  return in_layout_of(out, self);
}
at::Tensor& bilinear_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners,
                         OptD sh, OptD sw, at::Tensor& out) {
  return write_out(out, vk_bilinear(self, output_size, align_corners, sh, sw));
}

at::Tensor bilinear_bwd(const at::Tensor& grad, at::IntArrayRef output_size,
                        at::IntArrayRef input_size, bool align_corners, OptD sh, OptD sw) {
  if (cpu_bound(grad, input_size, output_size))
    return cpu_route<at::_ops::upsample_bilinear2d_backward>(grad, output_size, input_size,
                                                             align_corners, sh, sw);
  if (grad.scalar_type() == at::kBFloat16) {
    return bilinear_bwd(grad.to(at::kFloat), output_size, input_size, align_corners, sh, sw)
        .to(at::kBFloat16);
  }
  const bool f64 = grad.scalar_type() == at::kDouble;
  if (!f64) {
    check_float_storage("upsample_bilinear2d_backward", grad.scalar_type());
    alert_atomic_adds("upsample_bilinear2d_backward");
  }
  auto s = bilinear_shape("upsample_bilinear2d_backward", input_size, output_size, align_corners,
                          sh, sw);
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == input_size[0] && grad.size(1) == input_size[1] &&
                  grad.size(2) == s.oh && grad.size(3) == s.ow,
              "upsample_bilinear2d_backward: grad_output has sizes ", grad.sizes());
  if (f64) {
    return resample_f64_backward(grad.contiguous(), output_size, input_size, InterpMode::Linear,
                                 align_corners, {sh, sw});
  }
  at::Tensor g = grad.to(at::kFloat).contiguous();
  at::Tensor gi = at::zeros(input_size, g.options());
  guarded([&] { vkml::ops::upsample_bilinear_backward(vkml_device(g), addr(g), addr(gi), s); });
  return gi.to(grad.scalar_type());
}
at::Tensor& bilinear_bwd_out(const at::Tensor& grad, at::IntArrayRef output_size,
                             at::IntArrayRef input_size, bool align_corners, OptD sh, OptD sw,
                             at::Tensor& out) {
  return write_out(out, bilinear_bwd(grad, output_size, input_size, align_corners, sh, sw));
}

// ------------------------------------- linear / bicubic / trilinear / antialiased
// One separable float32 pass per spatial dim (interp.comp); the backward runs the
// adjoint passes in reverse order. float16 / bfloat16 round once at the end.

const char* dim_names(size_t k) { return k == 1 ? "W" : k == 2 ? "HW" : "DHW"; }

std::string sizes_text(at::IntArrayRef s, size_t k) {
  std::string r;
  const char* names = dim_names(k);
  for (size_t d = 0; d < k; ++d) {
    if (d) r += ", ";
    r += std::string(1, names[d]) + ": " + std::to_string(s[s.size() - k + d]);
  }
  return r;
}

void check_interp(const char* op, at::IntArrayRef in_sizes, at::IntArrayRef output_size) {
  size_t k = output_size.size();
  TORCH_CHECK(in_sizes.size() == k + 2, op, ": it is expected input_size equals to ", k + 2,
              ", but got size ", in_sizes.size());
  bool ok = true;
  for (size_t d = 0; d < k; ++d) ok = ok && in_sizes[d + 2] > 0 && output_size[d] > 0;
  TORCH_CHECK(ok, op, ": input and output sizes should be greater than 0, but got input (",
              sizes_text(in_sizes, k), ") output (", sizes_text(output_size, k), ")");
}

std::vector<vkml::ops::InterpPass> interp_passes(at::IntArrayRef in_sizes,
                                                 at::IntArrayRef output_size, InterpMode mode,
                                                 bool align_corners,
                                                 const std::vector<OptD>& scales) {
  size_t k = output_size.size();
  std::vector<int64_t> cur(in_sizes.begin(), in_sizes.end());
  std::vector<vkml::ops::InterpPass> passes;
  for (size_t d = 0; d < k; ++d) {
    vkml::ops::InterpPass p;
    size_t dim = d + 2;
    p.outer = 1;
    for (size_t j = 0; j < dim; ++j) p.outer *= cur[j];
    p.in = cur[dim];
    p.out = output_size[d];
    p.inner = 1;
    for (size_t j = dim + 1; j < cur.size(); ++j) p.inner *= cur[j];
    p.scale = pixel_scale<float>(p.in, p.out, align_corners, scales[d]);
    p.mode = mode;
    p.align_corners = align_corners;
    passes.push_back(p);
    cur[dim] = output_size[d];
  }
  return passes;
}

at::Tensor interp_forward(const char* op, const at::Tensor& self, at::IntArrayRef output_size,
                          InterpMode mode, bool align_corners, const std::vector<OptD>& scales) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), op,
                              " on vkml supports floating dtypes, got ", self.scalar_type());
  check_interp(op, self.sizes(), output_size);
  if (self.scalar_type() == at::kDouble)
    return in_layout_of(resample_f64(self, output_size, mode, align_corners, scales), self);
  auto passes = interp_passes(self.sizes(), output_size, mode, align_corners, scales);
  at::Tensor x = self.to(at::kFloat).contiguous();
  for (size_t d = 0; d < passes.size(); ++d) {
    std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
    sizes[d + 2] = output_size[d];
    at::Tensor y = at::empty(sizes, x.options());
    guarded([&] { vkml::ops::interp_pass(vkml_device(x), addr(x), addr(y), passes[d]); });
    x = y;
  }
  return in_layout_of(x.to(self.scalar_type()), self);
}

at::Tensor interp_backward(const char* op, const at::Tensor& grad, at::IntArrayRef output_size,
                           at::IntArrayRef input_size, InterpMode mode, bool align_corners,
                           const std::vector<OptD>& scales) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(grad.scalar_type()), op,
                              " on vkml supports floating dtypes, got ", grad.scalar_type());
  check_interp(op, input_size, output_size);
  const bool f64 = grad.scalar_type() == at::kDouble;
  if (!f64) alert_atomic_adds(op);
  size_t k = output_size.size();
  bool ok = grad.dim() == int64_t(k + 2) && grad.size(0) == input_size[0] &&
            grad.size(1) == input_size[1];
  for (size_t d = 0; ok && d < k; ++d) ok = grad.size(d + 2) == output_size[d];
  TORCH_CHECK(ok, op, ": grad_output has sizes ", grad.sizes(), ", expected output_size ",
              output_size);
  if (f64)
    return resample_f64_backward(grad.contiguous(), output_size, input_size, mode, align_corners,
                                 scales);
  auto passes = interp_passes(input_size, output_size, mode, align_corners, scales);
  at::Tensor g = grad.to(at::kFloat).contiguous();
  for (size_t d = k; d-- > 0;) {
    std::vector<int64_t> sizes(g.sizes().begin(), g.sizes().end());
    sizes[d + 2] = input_size[d + 2];
    at::Tensor gi = at::zeros(sizes, g.options());
    guarded([&] { vkml::ops::interp_pass_backward(vkml_device(g), addr(g), addr(gi), passes[d]); });
    g = gi;
  }
  return g.to(grad.scalar_type());
}

at::Tensor vk_linear1d(const at::Tensor& self, at::IntArrayRef os, bool ac, OptD s) {
  if (cpu_bound(self, self.sizes(), os)) {
    return cpu_route<at::_ops::upsample_linear1d>(self, os, ac, s);
  }
  return interp_forward("upsample_linear1d", self, os, InterpMode::Linear, ac, {s});
}
at::Tensor& linear1d_out(const at::Tensor& self, at::IntArrayRef os, bool ac, OptD s,
                         at::Tensor& out) {
  return write_out(out, vk_linear1d(self, os, ac, s));
}
at::Tensor linear1d_bwd(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, bool ac,
                        OptD s) {
  if (cpu_bound(g, is, os))
    return cpu_route<at::_ops::upsample_linear1d_backward>(g, os, is, ac, s);
  return interp_backward("upsample_linear1d_backward", g, os, is, InterpMode::Linear, ac, {s});
}
at::Tensor& linear1d_bwd_out(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, bool ac,
                             OptD s, at::Tensor& out) {
  return write_out(out, linear1d_bwd(g, os, is, ac, s));
}

at::Tensor vk_trilinear(const at::Tensor& self, at::IntArrayRef os, bool ac, OptD sd, OptD sh,
                        OptD sw) {
  // bfloat16 computes in float32 and rounds once, as CUDA (the CPU's kernel rounds each
  // of the 8 products to bfloat16, which is less accurate).
  if (cpu_bound(self, self.sizes(), os)) {
    return cpu_route<at::_ops::upsample_trilinear3d>(self, os, ac, sd, sh, sw);
  }
  return interp_forward("upsample_trilinear3d", self, os, InterpMode::Linear, ac, {sd, sh, sw});
}
at::Tensor& trilinear_out(const at::Tensor& self, at::IntArrayRef os, bool ac, OptD sd, OptD sh,
                          OptD sw, at::Tensor& out) {
  return write_out(out, vk_trilinear(self, os, ac, sd, sh, sw));
}
at::Tensor trilinear_bwd(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, bool ac,
                         OptD sd, OptD sh, OptD sw) {
  if (cpu_bound(g, is, os))
    return cpu_route<at::_ops::upsample_trilinear3d_backward>(g, os, is, ac, sd, sh, sw);
  return interp_backward("upsample_trilinear3d_backward", g, os, is, InterpMode::Linear, ac,
                         {sd, sh, sw});
}
at::Tensor& trilinear_bwd_out(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, bool ac,
                              OptD sd, OptD sh, OptD sw, at::Tensor& out) {
  return write_out(out, trilinear_bwd(g, os, is, ac, sd, sh, sw));
}

// The 2-D modes differ only in the filter: one template per mode.
template <InterpMode M>
constexpr const char* name2d() {
  return M == InterpMode::Cubic      ? "upsample_bicubic2d"
         : M == InterpMode::AaLinear ? "_upsample_bilinear2d_aa"
                                     : "_upsample_bicubic2d_aa";
}
template <InterpMode M>
constexpr const char* name2d_backward() {
  return M == InterpMode::Cubic      ? "upsample_bicubic2d_backward"
         : M == InterpMode::AaLinear ? "_upsample_bilinear2d_aa_backward"
                                     : "_upsample_bicubic2d_aa_backward";
}
template <InterpMode M>
at::Tensor vk_2d(const at::Tensor& self, at::IntArrayRef os, bool ac, OptD sh, OptD sw) {
  if (cpu_bound(self, self.sizes(), os)) {
    if constexpr (M == InterpMode::Cubic) {
      return cpu_route<at::_ops::upsample_bicubic2d>(self, os, ac, sh, sw);
    } else if constexpr (M == InterpMode::AaLinear) {
      return cpu_route<at::_ops::_upsample_bilinear2d_aa>(self, os, ac, sh, sw);
    } else {
      return cpu_route<at::_ops::_upsample_bicubic2d_aa>(self, os, ac, sh, sw);
    }
  }
  return interp_forward(name2d<M>(), self, os, M, ac, {sh, sw});
}
template <InterpMode M>
at::Tensor& out_2d(const at::Tensor& self, at::IntArrayRef os, bool ac, OptD sh, OptD sw,
                   at::Tensor& out) {
  return write_out(out, vk_2d<M>(self, os, ac, sh, sw));
}
template <InterpMode M>
at::Tensor bwd_2d(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, bool ac, OptD sh,
                  OptD sw) {
  if (cpu_bound(g, is, os)) {
    if constexpr (M == InterpMode::Cubic) {
      return cpu_route<at::_ops::upsample_bicubic2d_backward>(g, os, is, ac, sh, sw);
    } else if constexpr (M == InterpMode::AaLinear) {
      return cpu_route<at::_ops::_upsample_bilinear2d_aa_backward>(g, os, is, ac, sh, sw);
    } else {
      return cpu_route<at::_ops::_upsample_bicubic2d_aa_backward>(g, os, is, ac, sh, sw);
    }
  }
  return interp_backward(name2d_backward<M>(), g, os, is, M, ac, {sh, sw});
}
template <InterpMode M>
at::Tensor& bwd_out_2d(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, bool ac,
                       OptD sh, OptD sw, at::Tensor& out) {
  return write_out(out, bwd_2d<M>(g, os, is, ac, sh, sw));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("upsample_bilinear2d", TORCH_FN(vk_bilinear));
  m.impl("upsample_bilinear2d.out", TORCH_FN(bilinear_out));
  m.impl("upsample_bilinear2d_backward", TORCH_FN(bilinear_bwd));
  m.impl("upsample_bilinear2d_backward.grad_input", TORCH_FN(bilinear_bwd_out));
  m.impl("upsample_linear1d", TORCH_FN(vk_linear1d));
  m.impl("upsample_linear1d.out", TORCH_FN(linear1d_out));
  m.impl("upsample_linear1d_backward", TORCH_FN(linear1d_bwd));
  m.impl("upsample_linear1d_backward.grad_input", TORCH_FN(linear1d_bwd_out));
  m.impl("upsample_trilinear3d", TORCH_FN(vk_trilinear));
  m.impl("upsample_trilinear3d.out", TORCH_FN(trilinear_out));
  m.impl("upsample_trilinear3d_backward", TORCH_FN(trilinear_bwd));
  m.impl("upsample_trilinear3d_backward.grad_input", TORCH_FN(trilinear_bwd_out));
  m.impl("upsample_bicubic2d", TORCH_FN(vk_2d<InterpMode::Cubic>));
  m.impl("upsample_bicubic2d.out", TORCH_FN(out_2d<InterpMode::Cubic>));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(bwd_2d<InterpMode::Cubic>));
  m.impl("upsample_bicubic2d_backward.grad_input", TORCH_FN(bwd_out_2d<InterpMode::Cubic>));
  m.impl("_upsample_bilinear2d_aa", TORCH_FN(vk_2d<InterpMode::AaLinear>));
  m.impl("_upsample_bilinear2d_aa.out", TORCH_FN(out_2d<InterpMode::AaLinear>));
  m.impl("_upsample_bilinear2d_aa_backward", TORCH_FN(bwd_2d<InterpMode::AaLinear>));
  m.impl("_upsample_bilinear2d_aa_backward.grad_input", TORCH_FN(bwd_out_2d<InterpMode::AaLinear>));
  m.impl("_upsample_bicubic2d_aa", TORCH_FN(vk_2d<InterpMode::AaCubic>));
  m.impl("_upsample_bicubic2d_aa.out", TORCH_FN(out_2d<InterpMode::AaCubic>));
  m.impl("_upsample_bicubic2d_aa_backward", TORCH_FN(bwd_2d<InterpMode::AaCubic>));
  m.impl("_upsample_bicubic2d_aa_backward.grad_input", TORCH_FN(bwd_out_2d<InterpMode::AaCubic>));
}

}  // namespace vkml_aten
