// torchvision's deformable convolution (torchvision::deform_conv2d, DCN v1 and, with a
// mask, v2) and its backward, registered under torchvision's namespace for vkml tensors.
// As torchvision's own kernels: the input is sampled into columns (deformable im2col,
// on the device), and the convolution is one matrix product per weight group; the
// backward forms the column gradients by the transposed product, spreads them into
// the input's gradient and the offsets' and mask's, and forms the weight's gradient from
// recomputed columns. Images go in chunks, so the columns stay within a bounded size.
// float16 and bfloat16 run in float32 (autocast runs the op in float32, as torchvision's
// CUDA registration does); float64 on a device without it takes the counted CPU route.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

#include "op_helpers.h"
#include "torchvision_ops.h"
#include "vkml/ops/deform_conv.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// A chunk of images has at most kChunkImages images (as torchvision's kernels) and its
// columns at most kColumnsBytes (one image at least).
constexpr int64_t kChunkImages = 32;
constexpr int64_t kColumnsBytes = int64_t(256) << 20;

bool deform_conv_in_f64(const at::Tensor& t, bool backward) {
  return t.scalar_type() == at::kDouble &&
         vkml::ops::deform_conv_supports(vkml_device(t), vkml::DType::f64, backward);
}

struct DeformConvArgs {
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, offset_groups;
  bool use_mask;
};

// torchvision's checks, in its words; the shape of the whole batch.
vkml::ops::DeformConvShape checked_shape(const at::Tensor& input, const at::Tensor& weight,
                                         const at::Tensor& offset, const at::Tensor& mask,
                                         const at::Tensor& bias, const DeformConvArgs& a) {
  for (const at::Tensor* t : {&weight, &offset, &mask, &bias})
    check_same_device(input, *t, "deform_conv2d");
  TORCH_CHECK(input.dim() == 4, "deform_conv2d: expected a 4-d input, got ", input.dim(), "-d");
  TORCH_CHECK(offset.dim() == 4, "deform_conv2d: expected a 4-d offset, got ", offset.dim(), "-d");
  TORCH_CHECK(!a.use_mask || mask.dim() == 4, "deform_conv2d: expected a 4-d mask, got ",
              mask.dim(), "-d");
  TORCH_CHECK(weight.dim() == 4, "deform_conv2d: expected a 4-d weight, got ", weight.dim(), "-d");
  TORCH_CHECK(at::isFloatingType(input.scalar_type()),
              "deform_conv2d: expected a floating-point input, got ", input.scalar_type());
  for (const at::Tensor* t : {&weight, &offset, &mask, &bias})
    TORCH_CHECK(t->scalar_type() == input.scalar_type(),
                "deform_conv2d: expected all tensors of dtype ", input.scalar_type(), ", got ",
                t->scalar_type());
  vkml::ops::DeformConvShape s;
  s.images = input.size(0);
  s.c = input.size(1);
  s.h = input.size(2);
  s.w = input.size(3);
  s.kh = weight.size(2);
  s.kw = weight.size(3);
  s.stride_h = a.stride_h;
  s.stride_w = a.stride_w;
  s.pad_h = a.pad_h;
  s.pad_w = a.pad_w;
  s.dil_h = a.dil_h;
  s.dil_w = a.dil_w;
  s.offset_groups = a.offset_groups;
  s.use_mask = a.use_mask;
  TORCH_CHECK(s.kh > 0 && s.kw > 0, "weight_h: ", s.kh, " weight_w: ", s.kw);
  TORCH_CHECK(a.stride_h > 0 && a.stride_w > 0, "stride_h: ", a.stride_h,
              " stride_w: ", a.stride_w);
  TORCH_CHECK(a.pad_h >= 0 && a.pad_w >= 0, "pad_h: ", a.pad_h, " pad_w: ", a.pad_w);
  TORCH_CHECK(a.dil_h > 0 && a.dil_w > 0, "dilation_h: ", a.dil_h, " dilation_w: ", a.dil_w);
  TORCH_CHECK(a.groups > 0, "deform_conv2d: groups must be positive, got ", a.groups);
  s.out_h = (s.h + 2 * a.pad_h - (a.dil_h * (s.kh - 1) + 1)) / a.stride_h + 1;
  s.out_w = (s.w + 2 * a.pad_w - (a.dil_w * (s.kw - 1) + 1)) / a.stride_w + 1;
  TORCH_CHECK(weight.size(1) * a.groups == s.c,
              "deform_conv2d: weight.shape[1] * groups must be the input's channels, got ",
              weight.size(1), " * ", a.groups, " and ", s.c);
  TORCH_CHECK(weight.size(0) % a.groups == 0,
              "deform_conv2d: the output channels must be divisible by groups, got ",
              weight.size(0), " and ", a.groups);
  TORCH_CHECK(offset.size(1) == a.offset_groups * 2 * s.kh * s.kw,
              "offset.shape[1] is not valid: got: ", offset.size(1),
              " expected: ", a.offset_groups * 2 * s.kh * s.kw);
  TORCH_CHECK(!a.use_mask || mask.size(1) == a.offset_groups * s.kh * s.kw,
              "mask.shape[1] is not valid: got: ", mask.size(1),
              " expected: ", a.offset_groups * s.kh * s.kw);
  TORCH_CHECK(a.offset_groups > 0, "deform_conv2d: offset_groups must be positive, got ",
              a.offset_groups);
  TORCH_CHECK(s.c % a.offset_groups == 0,
              "deform_conv2d: the input's channels must be divisible by offset_groups, got ", s.c,
              " and ", a.offset_groups);
  TORCH_CHECK(offset.size(0) == s.images, "invalid batch size of offset");
  TORCH_CHECK(offset.size(2) == s.out_h && offset.size(3) == s.out_w, "offset output dims: (",
              offset.size(2), ", ", offset.size(3), ") - computed output dims: (", s.out_h, ", ",
              s.out_w, ")");
  TORCH_CHECK(mask.size(0) == s.images, "invalid batch size of mask");
  TORCH_CHECK(!a.use_mask || (mask.size(2) == s.out_h && mask.size(3) == s.out_w),
              "mask output dims: (", mask.size(2), ", ", mask.size(3),
              ") - computed output dims: (", s.out_h, ", ", s.out_w, ")");
  TORCH_CHECK(s.out_h > 0 && s.out_w > 0, "Calculated output size too small - out_h: ", s.out_h,
              " out_w: ", s.out_w);
  TORCH_CHECK(bias.numel() == weight.size(0), "deform_conv2d: expected a bias of ", weight.size(0),
              " elements, got ", bias.numel());
  return s;
}

// Images per chunk.
int64_t chunk_images(const vkml::ops::DeformConvShape& s, at::ScalarType type) {
  const int64_t per_image = s.c * s.kh * s.kw * s.out_h * s.out_w * int64_t(c10::elementSize(type));
  return std::clamp<int64_t>(kColumnsBytes / std::max<int64_t>(per_image, 1), 1,
                             std::min(kChunkImages, s.images));
}

// The chunk [first, first + n) of the batch, as launch buffers (columns set by the caller).
struct Chunk {
  vkml::ops::DeformConvShape shape;
  vkml::ops::DeformConvBuffers buffers;
};
Chunk chunk_of(const vkml::ops::DeformConvShape& s, const at::Tensor& x, const at::Tensor& off,
               const at::Tensor& m, int64_t first, int64_t n) {
  Chunk c{s, {}};
  c.shape.images = n;
  c.buffers.input = addr(x[first]);
  c.buffers.offset = addr(off[first]);
  c.buffers.mask = s.use_mask ? addr(m[first]) : addr(off[first]);  // unread without a mask
  return c;
}

// [c * kh * kw, n * L] columns as [groups, rows / groups, n * L] (a view).
at::Tensor by_group(const at::Tensor& columns, int64_t groups) {
  return columns.view({groups, columns.size(0) / groups, columns.size(1)});
}

at::Tensor vk_deform_conv2d(const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& offset, const at::Tensor& mask,
                            const at::Tensor& bias, int64_t stride_h, int64_t stride_w,
                            int64_t pad_h, int64_t pad_w, int64_t dil_h, int64_t dil_w,
                            int64_t groups, int64_t offset_groups, bool use_mask) {
  const DeformConvArgs a{stride_h, stride_w, pad_h,         pad_w,   dil_h,
                         dil_w,    groups,   offset_groups, use_mask};
  vkml::ops::DeformConvShape s = checked_shape(input, weight, offset, mask, bias, a);
  if (input.scalar_type() == at::kDouble && !deform_conv_in_f64(input, false))
    return torchvision_on_cpu("torchvision::deform_conv2d", input, weight, offset, mask, bias,
                              stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, offset_groups,
                              use_mask)[0]
        .toTensor();
  const at::ScalarType type = deform_conv_in_f64(input, false) ? at::kDouble : at::kFloat;
  s.dtype = type == at::kDouble ? vkml::DType::f64 : vkml::DType::f32;
  const int64_t out_channels = weight.size(0), l = s.out_h * s.out_w;
  if (s.images == 0 || out_channels == 0)
    return at::zeros({s.images, out_channels, s.out_h, s.out_w}, input.options());
  const at::Tensor x = input.to(type).contiguous();
  const at::Tensor off = offset.to(type).contiguous();
  const at::Tensor m = use_mask ? mask.to(type).contiguous() : at::Tensor();
  const at::Tensor w = weight.to(type).contiguous().view({groups, out_channels / groups, -1});
  at::Tensor out = at::empty({s.images, out_channels, s.out_h, s.out_w}, x.options());
  const int64_t per_chunk = chunk_images(s, type);
  for (int64_t first = 0; first < s.images; first += per_chunk) {
    const int64_t n = std::min(per_chunk, s.images - first);
    Chunk c = chunk_of(s, x, off, m, first, n);
    at::Tensor columns = at::empty({s.c * s.kh * s.kw, n * l}, x.options());
    c.buffers.columns = addr(columns);
    guarded([&] { vkml::ops::deform_conv_im2col(vkml_device(x), c.buffers, c.shape); });
    // [groups, out / groups, n * L] -> [n, out, L]
    const at::Tensor product = at::bmm(w, by_group(columns, groups));
    out.narrow(0, first, n)
        .view({n, out_channels, l})
        .copy_(product.view({out_channels, n, l}).transpose(0, 1));
  }
  out.add_(bias.to(type).view({1, out_channels, 1, 1}));
  return out.to(input.scalar_type());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> vk_deform_conv2d_backward(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight,
    const at::Tensor& offset, const at::Tensor& mask, const at::Tensor& bias, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dil_h, int64_t dil_w, int64_t groups,
    int64_t offset_groups, bool use_mask) {
  const DeformConvArgs a{stride_h, stride_w, pad_h,         pad_w,   dil_h,
                         dil_w,    groups,   offset_groups, use_mask};
  vkml::ops::DeformConvShape s = checked_shape(input, weight, offset, mask, bias, a);
  check_same_device(input, grad, "deform_conv2d backward");
  const int64_t out_channels = weight.size(0), l = s.out_h * s.out_w;
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == s.images && grad.size(1) == out_channels &&
                  grad.size(2) == s.out_h && grad.size(3) == s.out_w,
              "deform_conv2d backward: grad has sizes ", grad.sizes(), ", expected [", s.images,
              ", ", out_channels, ", ", s.out_h, ", ", s.out_w, "]");
  if (input.scalar_type() == at::kDouble && !deform_conv_in_f64(input, true)) {
    auto r = torchvision_on_cpu("torchvision::_deform_conv2d_backward", grad, input, weight, offset,
                                mask, bias, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups,
                                offset_groups, use_mask);
    return {r[0].toTensor(), r[1].toTensor(), r[2].toTensor(), r[3].toTensor(), r[4].toTensor()};
  }
  alert_atomic_adds("deform_conv2d_backward");  // the input and offset gradients
  if (s.images == 0 || out_channels == 0)       // nothing sampled: zero gradients, no kernels
    return {at::zeros_like(input), at::zeros_like(weight), at::zeros_like(offset),
            at::zeros_like(mask), grad.sum({0, 2, 3})};
  const at::ScalarType type = deform_conv_in_f64(input, true) ? at::kDouble : at::kFloat;
  s.dtype = type == at::kDouble ? vkml::DType::f64 : vkml::DType::f32;
  const at::Tensor x = input.to(type).contiguous();
  const at::Tensor off = offset.to(type).contiguous();
  const at::Tensor m = use_mask ? mask.to(type).contiguous() : at::Tensor();
  const at::Tensor g = grad.to(type).contiguous();
  const at::Tensor w = weight.to(type).contiguous().view({groups, out_channels / groups, -1});
  at::Tensor grad_input = at::zeros(x.sizes(), x.options());
  at::Tensor grad_offset = at::empty(off.sizes(), x.options());
  // Without a mask the mask is not an input of the product: its gradient is zeros.
  at::Tensor grad_mask =
      use_mask ? at::empty(m.sizes(), x.options()) : at::zeros(mask.sizes(), x.options());
  at::Tensor grad_weight = at::zeros(w.sizes(), x.options());
  const int64_t per_chunk = chunk_images(s, type);
  for (int64_t first = 0; first < s.images; first += per_chunk) {
    const int64_t n = std::min(per_chunk, s.images - first);
    Chunk c = chunk_of(s, x, off, m, first, n);
    // grad of this chunk as [groups, out / groups, n * L]
    const at::Tensor g_chunk = g.narrow(0, first, n)
                                   .view({n, out_channels, l})
                                   .transpose(0, 1)
                                   .reshape({groups, out_channels / groups, n * l});
    at::Tensor columns = at::empty({s.c * s.kh * s.kw, n * l}, x.options());
    c.buffers.columns = addr(columns);
    guarded([&] { vkml::ops::deform_conv_im2col(vkml_device(x), c.buffers, c.shape); });
    grad_weight.baddbmm_(g_chunk, by_group(columns, groups).transpose(1, 2));
    // The column gradients replace the columns.
    at::Tensor column_grads = by_group(columns, groups);
    at::bmm_out(column_grads, w.transpose(1, 2), g_chunk);
    guarded([&] {
      vkml::Device& dev = vkml_device(x);
      vkml::ops::deform_conv_col2im(dev, c.buffers, addr(grad_input[first]), c.shape);
      vkml::ops::deform_conv_coord(dev, c.buffers, addr(grad_offset[first]),
                                   use_mask ? addr(grad_mask[first]) : 0, c.shape);
    });
  }
  const at::Tensor grad_bias = g.sum({0, 2, 3});
  const at::ScalarType t = input.scalar_type();
  return {grad_input.to(t), grad_weight.view(weight.sizes()).to(t), grad_offset.to(t),
          grad_mask.to(t), grad_bias.to(t)};
}

// Autocast, as torchvision's for CUDA: the op runs in float32 and returns the input's dtype.
at::Tensor deform_conv2d_autocast(const at::Tensor& input, const at::Tensor& weight,
                                  const at::Tensor& offset, const at::Tensor& mask,
                                  const at::Tensor& bias, int64_t stride_h, int64_t stride_w,
                                  int64_t pad_h, int64_t pad_w, int64_t dil_h, int64_t dil_w,
                                  int64_t groups, int64_t offset_groups, bool use_mask) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastPrivateUse1);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torchvision::deform_conv2d", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, const at::Tensor&, c10::SymInt,
                                         c10::SymInt, c10::SymInt, c10::SymInt, c10::SymInt,
                                         c10::SymInt, c10::SymInt, c10::SymInt, bool)>();
  auto f32 = [](const at::Tensor& t) {
    return at::autocast::cached_cast(at::kFloat, t, c10::DeviceType::PrivateUse1);
  };
  return op
      .call(f32(input), f32(weight), f32(offset), f32(mask), f32(bias), stride_h, stride_w, pad_h,
            pad_w, dil_h, dil_w, groups, offset_groups, use_mask)
      .to(input.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(torchvision, PrivateUse1, m) {
  m.impl("deform_conv2d", TORCH_FN(vk_deform_conv2d));
  m.impl("_deform_conv2d_backward", TORCH_FN(vk_deform_conv2d_backward));
}

TORCH_LIBRARY_IMPL(torchvision, AutocastPrivateUse1, m) {
  m.impl("deform_conv2d", TORCH_FN(deform_conv2d_autocast));
}

}  // namespace vkml_aten
