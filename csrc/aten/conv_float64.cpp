#include "conv_float64.h"

#include <algorithm>
#include <vector>

namespace vkml_aten::conv_f64 {
namespace {

// The spatial dims of a ConvShape, in order (its arrays are right-aligned in d, h, w).
struct Spatial {
  std::vector<int64_t> in, out, kernel, stride, pad, dilation;
  int64_t kernel_numel = 1, out_numel = 1;
};

Spatial spatial_of(const vkml::ops::ConvShape& s) {
  Spatial d;
  for (int i = 3 - s.spatial; i < 3; ++i) {
    d.in.push_back(s.in[i]);
    d.out.push_back(s.out[i]);
    d.kernel.push_back(s.kernel[i]);
    d.stride.push_back(s.stride[i]);
    d.pad.push_back(s.pad[i]);
    d.dilation.push_back(s.dilation[i]);
    d.kernel_numel *= s.kernel[i];
    d.out_numel *= s.out[i];
  }
  return d;
}

// The x side zero-padded: [N, C, in + 2 pad...].
at::Tensor padded(const at::Tensor& x, const Spatial& d) {
  std::vector<int64_t> pads;  // constant_pad_nd's order: the last dim first
  for (size_t i = d.pad.size(); i-- > 0;) {
    pads.push_back(d.pad[i]);
    pads.push_back(d.pad[i]);
  }
  return at::constant_pad_nd(x, pads, 0);
}

// x [N, C, in...] as columns [groups, C / groups * K, N * L]: each window's elements down
// a column (C, then the kernel offsets), one column per batch element and output
// position. One strided copy of the padded input's windows.
at::Tensor columns(const at::Tensor& x, const Spatial& d, int64_t groups) {
  at::Tensor xp = padded(x, d).contiguous();
  const int64_t sp = int64_t(d.out.size());
  std::vector<int64_t> sizes{xp.size(0), xp.size(1)}, strides{xp.stride(0), xp.stride(1)};
  for (int64_t i = 0; i < sp; ++i) {
    sizes.push_back(d.out[i]);
    strides.push_back(xp.stride(2 + i) * d.stride[i]);
  }
  for (int64_t i = 0; i < sp; ++i) {
    sizes.push_back(d.kernel[i]);
    strides.push_back(xp.stride(2 + i) * d.dilation[i]);
  }
  at::Tensor windows = xp.as_strided(sizes, strides, xp.storage_offset());
  std::vector<int64_t> order{1};  // [C, k..., N, out...]
  for (int64_t i = 0; i < sp; ++i) order.push_back(2 + sp + i);
  order.push_back(0);
  for (int64_t i = 0; i < sp; ++i) order.push_back(2 + i);
  return windows.permute(order).reshape({groups, -1, x.size(0) * d.out_numel});
}

// gy [N, co, out...] as [groups, co / groups, N * L].
at::Tensor grouped_rows(const at::Tensor& gy, int64_t groups) {
  return gy.transpose(0, 1).reshape({groups, gy.size(1) / groups, -1});
}

// y [N, channels, ...] plus a per-channel bias (undefined: none).
at::Tensor with_bias(at::Tensor y, const at::Tensor& bias) {
  if (!bias.defined()) return y;
  std::vector<int64_t> shape(y.dim(), 1);
  shape[1] = -1;
  return y.add_(bias.view(shape));
}

// The columns of a whole batch can be large (kernel size times the input); batches go
// in chunks whose columns stay within this.
constexpr int64_t kColumnBytes = int64_t(256) << 20;

int64_t samples_per_chunk(const vkml::ops::ConvShape& s, const Spatial& d) {
  const int64_t per_sample = int64_t(sizeof(double)) * s.ci * d.kernel_numel * d.out_numel;
  return std::max<int64_t>(1, kColumnBytes / std::max<int64_t>(per_sample, 1));
}

// f over the batch in chunks (the shape's n set to each chunk's), the results joined by
// `join`: cat for per-sample results, a sum for the weight gradient.
template <typename F, typename Join>
at::Tensor by_chunks(const vkml::ops::ConvShape& s, F f, Join join) {
  const int64_t chunk = samples_per_chunk(s, spatial_of(s));
  if (chunk >= s.n) return f(int64_t(0), s);
  std::vector<at::Tensor> parts;
  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    vkml::ops::ConvShape c = s;
    c.n = std::min(chunk, s.n - n0);
    parts.push_back(f(n0, c));
  }
  return join(parts);
}

at::Tensor cat_batches(const std::vector<at::Tensor>& parts) { return at::cat(parts); }
at::Tensor summed(const std::vector<at::Tensor>& parts) {
  at::Tensor total = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) total = total + parts[i];
  return total;
}

at::Tensor forward_whole(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                         const vkml::ops::ConvShape& s) {
  const Spatial d = spatial_of(s);
  at::Tensor cols = columns(x, d, s.groups);
  at::Tensor y = at::bmm(w.reshape({s.groups, s.co / s.groups, -1}), cols);
  std::vector<int64_t> shape{s.co, s.n};
  shape.insert(shape.end(), d.out.begin(), d.out.end());
  return with_bias(y.reshape(shape).transpose(0, 1).contiguous(), bias);
}

at::Tensor weight_grad_whole(const at::Tensor& x, const at::Tensor& gy,
                             const vkml::ops::ConvShape& s) {
  const Spatial d = spatial_of(s);
  at::Tensor cols = columns(x, d, s.groups);
  at::Tensor gw = at::bmm(grouped_rows(gy, s.groups), cols.transpose(1, 2));
  std::vector<int64_t> shape{s.co, s.ci / s.groups};
  shape.insert(shape.end(), d.kernel.begin(), d.kernel.end());
  return gw.reshape(shape);
}

at::Tensor data_grad_whole(const at::Tensor& gy, const at::Tensor& w, const at::Tensor& bias,
                           const vkml::ops::ConvShape& s) {
  const Spatial d = spatial_of(s);
  const int64_t sp = int64_t(d.out.size());
  at::Tensor wg = w.reshape({s.groups, s.co / s.groups, -1});
  // [groups, C / groups * K, N * L], viewed as [N, C, out..., k...].
  at::Tensor gcols = at::bmm(wg.transpose(1, 2), grouped_rows(gy, s.groups));
  std::vector<int64_t> shape{s.ci};
  shape.insert(shape.end(), d.kernel.begin(), d.kernel.end());
  shape.push_back(s.n);
  shape.insert(shape.end(), d.out.begin(), d.out.end());
  std::vector<int64_t> order{1 + sp, 0};
  for (int64_t i = 0; i < sp; ++i) order.push_back(2 + sp + i);
  for (int64_t i = 0; i < sp; ++i) order.push_back(1 + i);
  at::Tensor windows = gcols.reshape(shape).permute(order);
  // Each kernel offset's slice of the windows goes back where that offset read from.
  // Windows overlap, so the adds go one offset at a time (an add into an overlapping view
  // would be undefined); each is one strided elementwise kernel.
  std::vector<int64_t> padded_sizes{s.n, s.ci};
  for (int64_t i = 0; i < sp; ++i) padded_sizes.push_back(d.in[i] + 2 * d.pad[i]);
  at::Tensor gxp = at::zeros(padded_sizes, gy.options());
  for (int64_t k = 0; k < d.kernel_numel; ++k) {
    at::Tensor target = gxp, source = windows;
    int64_t rest = k;
    for (int64_t i = sp; i-- > 0;) {
      const int64_t offset = (rest % d.kernel[i]) * d.dilation[i];
      rest /= d.kernel[i];
      target = target.slice(2 + i, offset, offset + d.stride[i] * (d.out[i] - 1) + 1, d.stride[i]);
      source = source.select(2 + sp + i, offset / d.dilation[i]);
    }
    target.add_(source);
  }
  at::Tensor gx = gxp;
  for (int64_t i = 0; i < sp; ++i) gx = gx.slice(2 + i, d.pad[i], d.pad[i] + d.in[i]);
  return with_bias(gx.contiguous(), bias);
}

}  // namespace

at::Tensor forward(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                   const vkml::ops::ConvShape& s) {
  return by_chunks(
      s,
      [&](int64_t n0, const vkml::ops::ConvShape& c) {
        return forward_whole(x.narrow(0, n0, c.n), w, bias, c);
      },
      cat_batches);
}

at::Tensor weight_grad(const at::Tensor& x, const at::Tensor& gy, const vkml::ops::ConvShape& s) {
  return by_chunks(
      s,
      [&](int64_t n0, const vkml::ops::ConvShape& c) {
        return weight_grad_whole(x.narrow(0, n0, c.n), gy.narrow(0, n0, c.n), c);
      },
      summed);
}

at::Tensor data_grad(const at::Tensor& gy, const at::Tensor& w, const at::Tensor& bias,
                     const vkml::ops::ConvShape& s) {
  return by_chunks(
      s,
      [&](int64_t n0, const vkml::ops::ConvShape& c) {
        return data_grad_whole(gy.narrow(0, n0, c.n), w, bias, c);
      },
      cat_batches);
}

}  // namespace vkml_aten::conv_f64
