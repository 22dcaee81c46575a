// Max / average / adaptive pooling over 1-3 spatial dims and their backward passes.
// 1-d pooling reaches the 2-d ops through PyTorch's composites.
#include <ATen/native/Pool.h>
#include <torch/library.h>

#include <optional>
#include <tuple>
#include <vector>

#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/pool.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// Shapes only: the forward passes send other dtypes (integers, float64 without float64
// arithmetic) to the CPU route, and the kernels check theirs (run_*).
// In the CPU's pooling words.
void check_input(const char* /*name*/, const at::Tensor& t, int sp) {
  TORCH_CHECK(t.dim() == sp + 1 || t.dim() == sp + 2, "non-empty ", sp + 1, "D or ", sp + 2,
              "D (batch mode) tensor expected for input");
  for (int d = 1; d < t.dim(); ++d)
    TORCH_CHECK(
        t.size(d) > 0, "Expected ", sp + 1, "D or ", sp + 2,
        "D (batch mode) tensor with optional 0 dim batch size for input, but got:", t.sizes());
}

int64_t pick(at::IntArrayRef v, int d, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[d];
}

struct Pool {
  vkml::ops::PoolShape s;
  std::vector<int64_t> out_sizes;
};

// Leading dims stay; the last `sp` dims are pooled.
Pool fixed(const char* name, const at::Tensor& self, int sp, at::IntArrayRef kernel,
           at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
           bool ceil_mode) {
  check_input(name, self, sp);
  auto ok = [](at::IntArrayRef v, size_t n) { return v.size() == 1 || v.size() == n; };
  TORCH_CHECK(ok(kernel, sp), name, ": kernel_size must either be a single int, or a tuple of ", sp,
              " ints");
  TORCH_CHECK(stride.empty() || ok(stride, sp), name, ": stride must either be omitted, a ",
              "single int, or a tuple of ", sp, " ints");
  TORCH_CHECK(ok(padding, sp), name, ": padding must either be a single int, or a tuple of ", sp,
              " ints");
  TORCH_CHECK(dilation.empty() || ok(dilation, sp), name,
              ": dilation must be either a single int, or a tuple of ", sp, " ints");
  Pool p;
  int lead = int(self.dim()) - sp;
  p.s.planes = 1;
  for (int d = 0; d < lead; ++d) {
    p.s.planes *= self.size(d);
    p.out_sizes.push_back(self.size(d));
  }
  for (int d = 0; d < sp; ++d) {
    int a = 3 - sp + d;
    int64_t k = pick(kernel, d, 1), st = pick(stride, d, k), pad = pick(padding, d, 0);
    int64_t dl = pick(dilation, d, 1), in = self.size(lead + d);
    TORCH_CHECK(k > 0, name, ": kernel size should be greater than zero");
    TORCH_CHECK(st > 0, name, ": stride should be greater than zero");
    TORCH_CHECK(dl > 0, name, ": dilation should be greater than zero");
    // The CPU's two checks, in its words: of the dilated kernel first, then of the kernel.
    TORCH_CHECK(pad <= ((k - 1) * dl + 1) / 2,
                "pad should be at most half of effective kernel size, but got pad=", pad,
                ", kernel_size=", k, " and dilation=", dl);
    TORCH_CHECK(pad >= 0 && pad <= k / 2,
                "pad should be smaller than or equal to half of kernel size, but got pad=", pad,
                ", kernel_size=", k);
    int64_t out = at::native::pooling_output_shape<int64_t>(in, k, pad, st, dl, ceil_mode);
    TORCH_CHECK(out > 0, name, ": output size is too small (input ", self.sizes(), ")");
    p.s.in[a] = in;
    p.s.out[a] = out;
    p.s.kernel[a] = k;
    p.s.stride[a] = st;
    p.s.pad[a] = pad;
    p.s.dilation[a] = dl;
    p.out_sizes.push_back(out);
  }
  return p;
}

Pool adaptive(const char* name, const at::Tensor& self, int sp, at::IntArrayRef output_size) {
  check_input(name, self, sp);
  TORCH_CHECK(int(output_size.size()) == sp, name, ": output_size must be ", sp);
  Pool p;
  p.s.adaptive = true;
  int lead = int(self.dim()) - sp;
  for (int d = 0; d < lead; ++d) {
    p.s.planes *= self.size(d);
    p.out_sizes.push_back(self.size(d));
  }
  for (int d = 0; d < sp; ++d) {
    TORCH_CHECK(output_size[d] >= 0, name, ": elements of output_size must be greater than or ",
                "equal to 0");
    p.s.in[3 - sp + d] = self.size(lead + d);
    p.s.out[3 - sp + d] = output_size[d];
    p.out_sizes.push_back(output_size[d]);
  }
  return p;
}

// The shape of a backward call, rebuilt from the input and the grad_output.
Pool adaptive_from(const char* name, const at::Tensor& self, const at::Tensor& grad, int sp) {
  std::vector<int64_t> os(grad.sizes().end() - sp, grad.sizes().end());
  return adaptive(name, self, sp, os);
}

void check_pool_dtype(const char* op, const at::Tensor& t) {
  if (t.scalar_type() != at::kDouble) check_float_storage(op, t.scalar_type());
}

// One thread walks an output's whole window: past the loop limit of Mesa 22.3's lavapipe
// (DeviceInfo::loop_iteration_limit; it stops such loops short, silently) a pool of
// larger windows (a global pool of a 400 x 400 map) takes the counted CPU route.
// Integer pools, and float64 ones on a device without float64 arithmetic (no kernels
// for them), take the counted CPU route too.
bool takes_cpu_route(const Pool& p, const at::Tensor& self) {
  if (!float_kernel_dtype(self)) return true;
  int64_t window = 1;
  for (int a = 0; a < 3; ++a)
    window *= p.s.adaptive ? (p.s.in[a] + p.s.out[a] - 1) / std::max<int64_t>(p.s.out[a], 1) + 1
                           : p.s.kernel[a];
  return past_loop_limit(self, window);
}

std::tuple<at::Tensor, at::Tensor> run_max(const Pool& p, const at::Tensor& self) {
  check_pool_dtype("pool", self);
  at::Tensor x = self.contiguous();
  at::Tensor y = at::empty(p.out_sizes, x.options());
  at::Tensor idx = at::empty(p.out_sizes, x.options().dtype(at::kLong));
  if (y.numel() > 0)
    guarded(
        [&] { vkml::ops::max_pool(vkml_device(x), to_vkml(x), addr(x), addr(y), addr(idx), p.s); });
  return {y, idx};
}

at::Tensor run_max_backward(const Pool& p, const at::Tensor& grad, const at::Tensor& self,
                            const at::Tensor& indices) {
  check_pool_dtype("pool backward", self);
  at::Tensor g = grad.to(self.scalar_type()).contiguous(), idx = indices.contiguous();
  TORCH_CHECK(idx.scalar_type() == at::kLong, "max_pool backward: indices must be int64");
  TORCH_CHECK(g.sizes() == at::IntArrayRef(p.out_sizes) && idx.sizes() == g.sizes(),
              "max_pool backward: grad_output and indices must have the output's shape");
  at::Tensor gi = at::empty(self.sizes(), g.options());
  if (gi.numel() > 0)
    guarded([&] {
      vkml::ops::max_pool_backward(vkml_device(g), to_vkml(g), addr(g), addr(idx), addr(gi), p.s);
    });
  return in_layout_of(gi, self);  // the input's layout, as the CPU's
}

at::Tensor run_avg(const Pool& p, const at::Tensor& self) {
  check_pool_dtype("pool", self);
  at::Tensor x = self.contiguous();
  at::Tensor y = at::empty(p.out_sizes, x.options());
  if (y.numel() > 0)
    guarded([&] { vkml::ops::avg_pool(vkml_device(x), to_vkml(x), addr(x), addr(y), p.s); });
  return y;
}

at::Tensor run_avg_backward(const Pool& p, const at::Tensor& grad, const at::Tensor& self) {
  check_pool_dtype("pool backward", self);
  at::Tensor g = grad.to(self.scalar_type()).contiguous();
  TORCH_CHECK(g.sizes() == at::IntArrayRef(p.out_sizes),
              "avg_pool backward: grad_output must have the output's shape");
  at::Tensor gi = at::empty(self.sizes(), g.options());
  if (gi.numel() > 0)
    guarded(
        [&] { vkml::ops::avg_pool_backward(vkml_device(g), to_vkml(g), addr(g), addr(gi), p.s); });
  return in_layout_of(gi, self);  // the input's layout, as the CPU's
}

void set_avg(Pool& p, bool count_include_pad, std::optional<int64_t> divisor) {
  TORCH_CHECK(!divisor.has_value() || *divisor != 0, "divisor must be not zero");
  p.s.count_include_pad = count_include_pad;
  p.s.divisor = divisor.value_or(0);
}

template <int SP>
std::tuple<at::Tensor, at::Tensor> max_pool(const at::Tensor& self, at::IntArrayRef kernel,
                                            at::IntArrayRef stride, at::IntArrayRef padding,
                                            at::IntArrayRef dilation, bool ceil_mode) {
  Pool p = fixed("max_pool", self, SP, kernel, stride, padding, dilation, ceil_mode);
  if (takes_cpu_route(p, self)) {
    if constexpr (SP == 2)
      return cpu_route<at::_ops::max_pool2d_with_indices>(self, kernel, stride, padding, dilation,
                                                          ceil_mode);
    else
      return cpu_route<at::_ops::max_pool3d_with_indices>(self, kernel, stride, padding, dilation,
                                                          ceil_mode);
  }
  auto [y, indices] = run_max(p, self);
  return {in_layout_of(y, self), in_layout_of(indices, self)};
}

template <int SP>
at::Tensor max_pool_backward(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef kernel,
                             at::IntArrayRef stride, at::IntArrayRef padding,
                             at::IntArrayRef dilation, bool ceil_mode, const at::Tensor& indices) {
  if (!float_kernel_dtype(self)) {  // its forward ran there too
    if constexpr (SP == 2)
      return cpu_route<at::_ops::max_pool2d_with_indices_backward>(
          grad, self, kernel, stride, padding, dilation, ceil_mode, indices);
    else
      return cpu_route<at::_ops::max_pool3d_with_indices_backward>(
          grad, self, kernel, stride, padding, dilation, ceil_mode, indices);
  }
  Pool p = fixed("max_pool_backward", self, SP, kernel, stride, padding, dilation, ceil_mode);
  return run_max_backward(p, grad, self, indices);
}

template <int SP>
at::Tensor avg_pool(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor) {
  Pool p = fixed("avg_pool", self, SP, kernel, stride, padding, {}, ceil_mode);
  set_avg(p, count_include_pad, divisor);
  if (takes_cpu_route(p, self)) {
    if constexpr (SP == 2)
      return cpu_route<at::_ops::avg_pool2d>(self, kernel, stride, padding, ceil_mode,
                                             count_include_pad, divisor);
    else
      return cpu_route<at::_ops::avg_pool3d>(self, kernel, stride, padding, ceil_mode,
                                             count_include_pad, divisor);
  }
  at::Tensor y = run_avg(p, self);
  return SP == 2 ? in_layout_of(y, self) : y;  // the CPU's 3-d pools give contiguous results
}

template <int SP>
at::Tensor avg_pool_backward(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef kernel,
                             at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                             bool count_include_pad, std::optional<int64_t> divisor) {
  if (!float_kernel_dtype(self)) {
    if constexpr (SP == 2)
      return cpu_route<at::_ops::avg_pool2d_backward>(grad, self, kernel, stride, padding,
                                                      ceil_mode, count_include_pad, divisor);
    else
      return cpu_route<at::_ops::avg_pool3d_backward>(grad, self, kernel, stride, padding,
                                                      ceil_mode, count_include_pad, divisor);
  }
  Pool p = fixed("avg_pool_backward", self, SP, kernel, stride, padding, {}, ceil_mode);
  set_avg(p, count_include_pad, divisor);
  return run_avg_backward(p, grad, self);
}

template <int SP>
at::Tensor adaptive_avg(const at::Tensor& self, at::IntArrayRef output_size) {
  Pool p = adaptive("adaptive_avg_pool", self, SP, output_size);
  // The CPU's 3-d kernel sums in the tensor's dtype and divides by each window side in
  // turn (sum / kT / kH / kW): 16-bit floats round at each step (1-d and 2-d use fp32);
  // float64 takes the same steps, rounding being exact there, so its divisions match.
  p.s.round_steps = SP == 3 && self.scalar_type() != at::kFloat;
  if (takes_cpu_route(p, self)) {
    if constexpr (SP == 2)
      return cpu_route<at::_ops::_adaptive_avg_pool2d>(self, output_size);
    else
      return cpu_route<at::_ops::_adaptive_avg_pool3d>(self, output_size);
  }
  at::Tensor y = run_avg(p, self);
  return SP == 2 ? in_layout_of(y, self) : y;
}

// The CPU's check on the adaptive poolings' grad_output (an output size of 0 gives an
// empty forward, whose backward raises).
void check_adaptive_grad(const char* op, const at::Tensor& grad) {
  for (int64_t d = 1; d < grad.dim(); ++d)
    TORCH_CHECK(grad.size(d) > 0, op,
                "(): Expected grad_output to have non-zero size for non-batch dimensions, but "
                "grad_output has sizes ",
                grad.sizes(), " with dimension ", d, " being empty");
}

template <int SP>
at::Tensor adaptive_avg_backward(const at::Tensor& grad, const at::Tensor& self) {
  check_adaptive_grad(SP == 2 ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool3d_backward",
                      grad);
  if (!float_kernel_dtype(self)) {
    if constexpr (SP == 2)
      return cpu_route<at::_ops::_adaptive_avg_pool2d_backward>(grad, self);
    else
      return cpu_route<at::_ops::_adaptive_avg_pool3d_backward>(grad, self);
  }
  return run_avg_backward(adaptive_from("adaptive_avg_pool_backward", self, grad, SP), grad, self);
}

template <int SP>
std::tuple<at::Tensor, at::Tensor> adaptive_max(const at::Tensor& self,
                                                at::IntArrayRef output_size) {
  Pool p = adaptive("adaptive_max_pool", self, SP, output_size);
  if (takes_cpu_route(p, self)) {
    if constexpr (SP == 2)
      return cpu_route<at::_ops::adaptive_max_pool2d>(self, output_size);
    else
      return cpu_route<at::_ops::adaptive_max_pool3d>(self, output_size);
  }
  auto [y, indices] = run_max(p, self);
  if constexpr (SP == 2) return {in_layout_of(y, self), in_layout_of(indices, self)};
  return {y, indices};
}

template <int SP>
at::Tensor adaptive_max_backward(const at::Tensor& grad, const at::Tensor& self,
                                 const at::Tensor& indices) {
  check_adaptive_grad(SP == 2 ? "adaptive_max_pool2d_backward" : "adaptive_max_pool3d_backward",
                      grad);
  if (!float_kernel_dtype(self)) {
    if constexpr (SP == 2)
      return cpu_route<at::_ops::adaptive_max_pool2d_backward>(grad, self, indices);
    else
      return cpu_route<at::_ops::adaptive_max_pool3d_backward>(grad, self, indices);
  }
  return run_max_backward(adaptive_from("adaptive_max_pool_backward", self, grad, SP), grad, self,
                          indices);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool<2>));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool_backward<2>));
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool<3>));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool_backward<3>));
  m.impl("avg_pool2d", TORCH_FN(avg_pool<2>));
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool_backward<2>));
  m.impl("avg_pool3d", TORCH_FN(avg_pool<3>));
  m.impl("avg_pool3d_backward", TORCH_FN(avg_pool_backward<3>));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg<2>));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_backward<2>));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptive_avg<3>));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptive_avg_backward<3>));
  m.impl("adaptive_max_pool2d", TORCH_FN(adaptive_max<2>));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(adaptive_max_backward<2>));
  m.impl("adaptive_max_pool3d", TORCH_FN(adaptive_max<3>));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(adaptive_max_backward<3>));
}

}  // namespace vkml_aten
