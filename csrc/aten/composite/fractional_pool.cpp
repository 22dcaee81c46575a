// fractional_max_pool2d / 3d and backward from native ops: the window starts come
// from the random samples with elementwise ops in the input dtype (the CPU's
// generate_intervals rounds the same way), each window offset is a gather, and a
// running comparison keeps the CPU's choice (first maximum, NaN wins). The
// backward scatters the gradient to the indices. bfloat16 runs in float32.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <limits>
#include <vector>

namespace vkml_aten {
namespace {

// Window starts [planes, out] of one dim: trunc((i + u) * alpha) - trunc(u * alpha)
// for i < out - 1, and in - pool for the last.
at::Tensor starts_of(const at::Tensor& sample, int64_t in, int64_t out, int64_t pool) {
  int64_t planes = sample.size(0);
  at::Tensor last = at::full({planes, 1}, in - pool, sample.options().dtype(at::kLong));
  if (out <= 1) return last.narrow(1, 0, out);
  // alpha in the sample dtype: a float16 division rounds to float16.
  double alpha = at::scalar_tensor(double(in - pool), at::kFloat)
                     .to(sample.scalar_type())
                     .div(at::scalar_tensor(double(out - 1), at::kFloat).to(sample.scalar_type()))
                     .item<double>();
  at::Tensor i = at::arange(out - 1, at::TensorOptions().dtype(at::kLong)).to(sample.device());
  at::Tensor u = sample.unsqueeze(1);
  at::Tensor s =
      ((i.to(sample.scalar_type()) + u) * alpha).to(at::kLong) - (u * alpha).to(at::kLong);
  return at::cat({s, last}, 1);
}

template <int D>
std::tuple<at::Tensor, at::Tensor> frac_pool(const at::Tensor& self, at::IntArrayRef kernel,
                                             at::IntArrayRef output_size,
                                             const at::Tensor& samples) {
  const char* op = D == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d";
  TORCH_CHECK(kernel.size() == D && output_size.size() == D, op,
              ": kernel_size and output_size "
              "must have ",
              D, " elements");
  TORCH_CHECK(self.dim() == D + 1 || self.dim() == D + 2, op, "(): Expected ", D + 1, "D or ",
              D + 2, "D tensor, but got: ", self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d)  // from 1, batched or not, as the CPU checks
    TORCH_CHECK(self.size(d) > 0, op,
                "(): Expected input to have non-zero size for non-batch dimensions, but got",
                self.sizes(), " with dimension ", d, " being empty.");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), op, " expects a floating-point input");
  // The CPU's checks and messages: a sample row per plane, more rows than the batch
  // allowed (the first are used).
  TORCH_CHECK(samples.scalar_type() == self.scalar_type(),
              "Expect _random_samples to have the same dtype as input");
  TORCH_CHECK(samples.dim() == 3, "Expect _random_samples to have 3 dimensions, got ",
              samples.dim());
  const bool batched = self.dim() == D + 2;
  const int64_t n = batched ? self.size(0) : 1, c = self.size(batched ? 1 : 0);
  TORCH_CHECK(samples.size(0) >= n,
              "Expect _random_samples.size(0) no less then input batch size.");
  TORCH_CHECK(samples.size(1) == c, "Expect _random_samples.size(1) equals to input channel size.");
  TORCH_CHECK(samples.size(2) == D, "Expect _random_samples.size(2) equals to ", D, "; got ",
              samples.size(2), ".");
  if (self.scalar_type() == at::kBFloat16) {
    auto [o, i] = frac_pool<D>(self.to(at::kFloat), kernel, output_size, samples.to(at::kFloat));
    return {o.to(at::kBFloat16), i};
  }
  std::vector<int64_t> in(self.sizes().end() - D, self.sizes().end());
  for (int d = 0; d < D; ++d) {
    TORCH_CHECK(output_size[d] + kernel[d] - 1 <= in[d], op, "(): pool size ", kernel[d],
                " too large relative to input size ", in[d], " for output size ", output_size[d]);
  }
  int64_t planes = n * c;
  std::vector<int64_t> out_sizes(self.sizes().begin(), self.sizes().end() - D);
  int64_t out_numel = planes, in_plane = 1;
  for (int d = 0; d < D; ++d) {
    out_sizes.push_back(output_size[d]);
    out_numel *= output_size[d];
    in_plane *= in[d];
  }
  if (out_numel == 0) {
    return {at::empty(out_sizes, self.options()),
            at::empty(out_sizes, self.options().dtype(at::kLong))};
  }
  at::Tensor u = samples.narrow(0, 0, n).reshape({planes, D});
  // The CPU draws (w, h) for 2-d and (t, h, w) for 3-d.
  std::vector<at::Tensor> starts(D);
  for (int d = 0; d < D; ++d) {
    int col = D == 2 ? 1 - d : d;
    at::Tensor st = starts_of(u.select(1, col), in[d], output_size[d], kernel[d]);
    std::vector<int64_t> shape(D + 1, 1);
    shape[0] = planes;
    shape[d + 1] = output_size[d];
    int64_t stride = 1;
    for (int e = d + 1; e < D; ++e) stride *= in[e];
    starts[d] = (st * stride).view(shape);  // flat offset of the window start along d
  }
  at::Tensor base = starts[0];
  for (int d = 1; d < D; ++d) base = base + starts[d];
  base = base.contiguous().view({planes, -1});
  at::Tensor x = self.contiguous().view({planes, in_plane});
  at::Tensor best = at::full(base.sizes(), -std::numeric_limits<double>::infinity(), x.options());
  at::Tensor best_i = base;
  std::vector<int64_t> k(D, 0);
  while (true) {
    int64_t off = 0;
    for (int d = 0; d < D; ++d) {
      int64_t stride = 1;
      for (int e = d + 1; e < D; ++e) stride *= in[e];
      off += k[d] * stride;
    }
    at::Tensor idx = base + off;
    at::Tensor v = x.gather(1, idx);
    at::Tensor take = (v > best).logical_or_(v.isnan());
    best = at::where(take, v, best);
    best_i = at::where(take, idx, best_i);
    int d = D - 1;
    while (d >= 0 && ++k[d] == kernel[d]) k[d--] = 0;
    if (d < 0) break;
  }
  return {best.view(out_sizes), best_i.view(out_sizes)};
}

template <int D>
std::tuple<at::Tensor&, at::Tensor&> frac_pool_out(const at::Tensor& self, at::IntArrayRef kernel,
                                                   at::IntArrayRef output_size,
                                                   const at::Tensor& samples, at::Tensor& output,
                                                   at::Tensor& indices) {
  auto [o, i] = frac_pool<D>(self, kernel, output_size, samples);
  at::native::resize_output(output, o.sizes());
  output.copy_(o);
  at::native::resize_output(indices, i.sizes());
  indices.copy_(i);
  return {output, indices};
}

template <int D>
at::Tensor frac_pool_bwd(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef kernel,
                         at::IntArrayRef output_size, const at::Tensor& indices) {
  TORCH_CHECK(grad.sizes() == indices.sizes(), "fractional_max_pool", D,
              "d_backward(): gradOutput and indices shapes differ: ", grad.sizes(), " vs ",
              indices.sizes());
  if (self.scalar_type() == at::kBFloat16) {
    return frac_pool_bwd<D>(grad.to(at::kFloat), self.to(at::kFloat), kernel, output_size, indices)
        .to(at::kBFloat16);
  }
  int64_t planes = 1;
  for (int64_t d = 0; d < self.dim() - D; ++d) planes *= self.size(d);
  at::Tensor gi = at::zeros(self.sizes(), self.options());
  if (grad.numel() == 0 || gi.numel() == 0) return gi;
  gi.view({planes, -1})
      .scatter_add_(1, indices.reshape({planes, -1}),
                    grad.to(self.scalar_type()).reshape({planes, -1}));
  return gi;
}
template <int D>
at::Tensor& frac_pool_bwd_out(const at::Tensor& grad, const at::Tensor& self,
                              at::IntArrayRef kernel, at::IntArrayRef output_size,
                              const at::Tensor& indices, at::Tensor& grad_input) {
  at::Tensor r = frac_pool_bwd<D>(grad, self, kernel, output_size, indices);
  at::native::resize_output(grad_input, r.sizes());
  grad_input.copy_(r);
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fractional_max_pool2d", TORCH_FN(frac_pool<2>));
  m.impl("fractional_max_pool2d.output", TORCH_FN(frac_pool_out<2>));
  m.impl("fractional_max_pool2d_backward", TORCH_FN(frac_pool_bwd<2>));
  m.impl("fractional_max_pool2d_backward.grad_input", TORCH_FN(frac_pool_bwd_out<2>));
  m.impl("fractional_max_pool3d", TORCH_FN(frac_pool<3>));
  m.impl("fractional_max_pool3d.output", TORCH_FN(frac_pool_out<3>));
  m.impl("fractional_max_pool3d_backward", TORCH_FN(frac_pool_bwd<3>));
  m.impl("fractional_max_pool3d_backward.grad_input", TORCH_FN(frac_pool_bwd_out<3>));
}

}  // namespace vkml_aten
