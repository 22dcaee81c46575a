// Convolution (plain and transposed, 1-3 spatial dims) and its backward pass, as
// PyTorch routes them for a custom device: convolution_overrideable and
// convolution_backward_overrideable. at::_convolution has already checked the shapes.
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "conv_float64.h"
#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/conv.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

int64_t param(at::IntArrayRef v, int64_t d, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[d];
}

// The kernel's view: x side [N, ci, in...], y side [N, co, out...], weight [co, ci/g, k...].
// For a transposed convolution the x side is its output and the y side its input.
struct Geometry {
  vkml::ops::ConvShape s;
  std::vector<int64_t> x_sizes, y_sizes;
};

Geometry geometry(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                  at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                  at::IntArrayRef output_padding, int64_t groups) {
  TORCH_CHECK(input.dim() >= 3 && input.dim() <= 5,
              "vkml convolution expects a batched 1-d, 2-d or 3-d input, got ", input.dim(),
              " dims");
  TORCH_CHECK(weight.dim() == input.dim(), "weight should have ", input.dim(), " dims");
  Geometry g;
  auto& s = g.s;
  int sp = int(input.dim() - 2);
  s.spatial = sp;
  s.groups = groups;
  s.n = input.size(0);
  int64_t in_ch = input.size(1);
  int64_t out_ch = transposed ? weight.size(1) * groups : weight.size(0);
  s.ci = transposed ? out_ch : in_ch;
  s.co = transposed ? in_ch : out_ch;
  g.x_sizes = {s.n, s.ci};
  g.y_sizes = {s.n, s.co};
  for (int d = 0; d < sp; ++d) {
    int a = 3 - sp + d;
    int64_t k = weight.size(2 + d), st = param(stride, d, 1), p = param(padding, d, 0);
    int64_t dl = param(dilation, d, 1), i = input.size(2 + d);
    s.kernel[a] = k;
    s.stride[a] = st;
    s.pad[a] = p;
    s.dilation[a] = dl;
    if (!transposed) {
      s.in[a] = i;
      s.out[a] = (i + 2 * p - dl * (k - 1) - 1) / st + 1;
    } else {
      s.out[a] = i;
      s.in[a] = (i - 1) * st - 2 * p + dl * (k - 1) + param(output_padding, d, 0) + 1;
    }
    TORCH_CHECK(s.in[a] >= 0 && s.out[a] >= 0, "vkml convolution: invalid output size");
  }
  for (int d = 0; d < sp; ++d) {
    g.x_sizes.push_back(s.in[3 - sp + d]);
    g.y_sizes.push_back(s.out[3 - sp + d]);
  }
  return g;
}

// The layout PyTorch's CPU and cuDNN convolutions give a 2-d convolution's output:
// channels-last where the input or the weight is, else contiguous. (For 3-d ones they
// differ: cuDNN gives channels-last-3d, the CPU contiguous; vkml keeps the CPU's.) The
// kernels write contiguous results; channels-last ones are copied before they return.
at::MemoryFormat result_format(const at::Tensor& input, const at::Tensor& weight) {
  constexpr auto last = at::MemoryFormat::ChannelsLast;
  if (input.dim() == 4 &&
      (input.suggest_memory_format() == last || weight.suggest_memory_format() == last))
    return last;
  return at::MemoryFormat::Contiguous;
}

at::Tensor in_format(at::Tensor t, at::MemoryFormat format) {
  return format == at::MemoryFormat::Contiguous ? t : t.contiguous(format);
}

// Integer convolutions, and float64 ones on a device without float64 arithmetic, have no
// kernels: the counted CPU route, through aten::convolution (the CPU has no
// convolution_overrideable, the hook this file fills).
bool cpu_conv(const at::Tensor& input) {
  const at::ScalarType t = input.scalar_type();
  if (t == at::kDouble) return !vkml_device(input).info().supports_fp64;
  return at::isIntegralType(t, /*includeBool=*/false);
}

// float64 is composed of float64 kernels (conv_float64.h); the conv kernels compute in fp32.
bool conv_in_float64(const at::Tensor& x) { return x.scalar_type() == at::kDouble; }

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  if (cpu_conv(input))
    return cpu_route<at::_ops::convolution>(input, weight, bias, stride, padding, dilation,
                                            transposed, output_padding, groups);
  if (!conv_in_float64(input)) check_float_storage("convolution", input.scalar_type());
  TORCH_CHECK(weight.scalar_type() == input.scalar_type(), "Input type (", input.scalar_type(),
              ") and weight type (", weight.scalar_type(), ") should be the same");
  Geometry g =
      geometry(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor x = input.contiguous(), w = weight.contiguous();
  at::Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(input.scalar_type()).contiguous();
  const at::MemoryFormat format = result_format(input, weight);
  at::Tensor out = at::empty(transposed ? g.x_sizes : g.y_sizes, x.options());
  if (out.numel() == 0) return in_format(out, format);
  if (x.numel() == 0 || w.numel() == 0) {  // nothing to sum: the bias alone
    out.zero_();
    if (b.defined()) {
      std::vector<int64_t> shape(out.dim(), 1);
      shape[1] = -1;
      out.add_(b.view(shape));
    }
    return in_format(out, format);
  }
  if (conv_in_float64(x)) {
    out = transposed ? conv_f64::data_grad(x, w, b, g.s) : conv_f64::forward(x, w, b, g.s);
    return in_format(out, format);
  }
  guarded([&] {
    auto dt = to_vkml(x.scalar_type());
    uint64_t pb = b.defined() ? addr(b) : 0;
    if (!transposed) {
      vkml::ops::conv_forward(vkml_device(x), dt, addr(x), addr(w), pb, addr(out), g.s);
    } else {
      vkml::ops::conv_data_grad(vkml_device(x), dt, addr(x), addr(w), pb, addr(out), g.s);
    }
  });
  return in_format(out, format);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  if (cpu_conv(input)) {
    const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
    const int64_t bias_sizes[1] = {out_channels};
    return cpu_route<at::_ops::convolution_backward>(
        grad_output, input, weight, std::optional<at::IntArrayRef>(bias_sizes), stride, padding,
        dilation, transposed, output_padding, groups, output_mask);
  }
  if (!conv_in_float64(input)) check_float_storage("convolution", input.scalar_type());
  Geometry g =
      geometry(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor x = input.contiguous(), w = weight.contiguous();
  at::Tensor gy = grad_output.to(input.scalar_type()).contiguous();
  auto dt = to_vkml(x.scalar_type());
  const bool f64 = conv_in_float64(x);
  at::Tensor gi, gw, gb;
  // Plain: x = input, y = grad_output. Transposed: x = grad_output, y = input.
  const at::Tensor& xs = transposed ? gy : x;
  const at::Tensor& ys = transposed ? x : gy;
  if (output_mask[0]) {
    gi = at::empty(input.sizes(), x.options());
    if (gi.numel() > 0) {
      if (gy.numel() == 0 || w.numel() == 0) {
        gi.zero_();
      } else if (f64) {
        gi = transposed ? conv_f64::forward(gy, w, {}, g.s) : conv_f64::data_grad(gy, w, {}, g.s);
      } else {
        guarded([&] {
          if (!transposed)
            vkml::ops::conv_data_grad(vkml_device(x), dt, addr(gy), addr(w), 0, addr(gi), g.s);
          else
            vkml::ops::conv_forward(vkml_device(x), dt, addr(gy), addr(w), 0, addr(gi), g.s);
        });
      }
    }
  }
  if (output_mask[1]) {
    gw = at::empty(weight.sizes(), x.options());
    if (gw.numel() > 0) {
      if (x.numel() == 0 || gy.numel() == 0) {
        gw.zero_();
      } else if (f64) {
        gw = conv_f64::weight_grad(xs, ys, g.s);
      } else {
        guarded([&] {
          vkml::ops::conv_weight_grad(vkml_device(x), dt, addr(xs), addr(ys), addr(gw), g.s);
        });
      }
    }
  }
  if (output_mask[2]) {
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < gy.dim(); ++d) dims.push_back(d);
    gb = gy.sum(dims);
  }
  // The gradients in the convolution's layout (its output's), as the CPU's and CUDA's.
  const at::MemoryFormat format = result_format(input, weight);
  if (gi.defined()) gi = in_format(gi, format);
  if (gw.defined()) gw = in_format(gw, format);
  return {gi, gw, gb};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace vkml_aten
