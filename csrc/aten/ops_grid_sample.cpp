// grid_sampler_2d / grid_sampler_3d (torch.nn.functional.grid_sample) and their
// backward, in float32 and float64.
#include <torch/library.h>

#include <array>
#include <vector>

#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/grid_sample.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

vkml::ops::GridSampleShape shape_of(const at::Tensor& input, const at::Tensor& grid, int dims,
                                    int64_t mode, int64_t padding, bool align_corners) {
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(),
              "grid_sampler(): expected input and grid to have same dtype, but input has ",
              input.scalar_type(), " and grid has ", grid.scalar_type());
  TORCH_CHECK(input.dim() == dims + 2 && grid.dim() == dims + 2, "grid_sampler(): expected ",
              dims + 2,
              "D input and grid with same number of "
              "dimensions, but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(input.size(0) == grid.size(0),
              "grid_sampler(): expected grid and input to have same batch size, but got input "
              "with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(grid.size(-1) == dims, "grid_sampler(): expected grid to have size ", dims,
              " in last dimension, but got grid with sizes ", grid.sizes());
  for (int64_t d = 2; d < input.dim(); ++d) {
    TORCH_CHECK(input.size(d) > 0,
                "grid_sampler(): expected input to have non-empty spatial "
                "dimensions, but input has sizes ",
                input.sizes(), " with dimension ", d, " being empty");
  }
  TORCH_CHECK(mode >= 0 && mode <= 2, "grid_sampler(): unknown interpolation mode ", mode);
  TORCH_CHECK(padding >= 0 && padding <= 2, "grid_sampler(): unknown padding mode ", padding);
  TORCH_CHECK(dims == 2 || mode != 2,
              "grid_sampler(): bicubic interpolation only supports "
              "4D input");
  vkml::ops::GridSampleShape s;
  s.dims = dims;
  s.n = input.size(0);
  s.c = input.size(1);
  s.id = dims == 3 ? input.size(2) : 1;
  s.ih = input.size(-2);
  s.iw = input.size(-1);
  s.od = dims == 3 ? grid.size(1) : 1;
  s.oh = grid.size(-3);
  s.ow = grid.size(-2);
  s.mode = static_cast<vkml::ops::GridInterp>(mode);
  s.padding = static_cast<vkml::ops::GridPadding>(padding);
  s.align_corners = align_corners;
  s.dtype = input.scalar_type() == at::kDouble ? vkml::DType::f64 : vkml::DType::f32;
  return s;
}

bool is_16bit_float(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

// A kernel for the input's dtype on its device; shape_of checks the rest.
bool has_kernel(const at::Tensor& input, bool input_gradient) {
  const at::ScalarType t = input.scalar_type();
  if (t == at::kFloat) return true;
  return t == at::kDouble &&
         vkml::ops::grid_sample_supports(vkml_device(input), vkml::DType::f64, input_gradient);
}

std::vector<int64_t> out_sizes(const at::Tensor& input, const at::Tensor& grid) {
  std::vector<int64_t> r{input.size(0), input.size(1)};
  for (int64_t d = 1; d < grid.dim() - 1; ++d) r.push_back(grid.size(d));
  return r;
}

template <int D>
at::Tensor vk_grid_sampler(const at::Tensor& input, const at::Tensor& grid, int64_t mode,
                           int64_t padding, bool align_corners) {
  // float16 / bfloat16 compute in float32 and round once, as CUDA's kernel (its opmath
  // type); the CPU rounds every step to the dtype, which is less accurate.
  if (is_16bit_float(input) && input.scalar_type() == grid.scalar_type())
    return vk_grid_sampler<D>(input.to(at::kFloat), grid.to(at::kFloat), mode, padding,
                              align_corners)
        .to(input.scalar_type());
  // float64 on a device without it takes the counted CPU route.
  if (!has_kernel(input, /*input_gradient=*/false)) {
    if constexpr (D == 2) {
      return cpu_route<at::_ops::grid_sampler_2d>(input, grid, mode, padding, align_corners);
    } else {
      return cpu_route<at::_ops::grid_sampler_3d>(input, grid, mode, padding, align_corners);
    }
  }
  auto s = shape_of(input, grid, D, mode, padding, align_corners);
  at::Tensor x = input.contiguous();
  at::Tensor g = grid.contiguous();
  at::Tensor out = at::empty(out_sizes(input, grid), x.options());
  guarded([&] { vkml::ops::grid_sample(vkml_device(x), addr(x), addr(g), addr(out), s); });
  return out;
}
template <int D>
at::Tensor& grid_sampler_out(const at::Tensor& input, const at::Tensor& grid, int64_t mode,
                             int64_t padding, bool align_corners, at::Tensor& out) {
  return write_out(out, vk_grid_sampler<D>(input, grid, mode, padding, align_corners));
}

template <int D>
std::tuple<at::Tensor, at::Tensor> vk_grid_sampler_bwd(const at::Tensor& grad_output,
                                                       const at::Tensor& input,
                                                       const at::Tensor& grid, int64_t mode,
                                                       int64_t padding, bool align_corners,
                                                       std::array<bool, 2> output_mask) {
  if (is_16bit_float(input) && input.scalar_type() == grid.scalar_type()) {  // as forward
    auto [gi, gg] =
        vk_grid_sampler_bwd<D>(grad_output.to(at::kFloat), input.to(at::kFloat),
                               grid.to(at::kFloat), mode, padding, align_corners, output_mask);
    return {gi.defined() ? gi.to(input.scalar_type()) : gi,
            gg.defined() ? gg.to(grid.scalar_type()) : gg};
  }
  if (!has_kernel(input, output_mask[0])) {  // the counted CPU route, as forward
    if constexpr (D == 2) {
      return cpu_route<at::_ops::grid_sampler_2d_backward>(grad_output, input, grid, mode, padding,
                                                           align_corners, output_mask);
    } else {
      return cpu_route<at::_ops::grid_sampler_3d_backward>(grad_output, input, grid, mode, padding,
                                                           align_corners, output_mask);
    }
  }
  auto s = shape_of(input, grid, D, mode, padding, align_corners);
  // The input gradient adds atomically; the grid gradient has no atomics.
  if (output_mask[0])
    alert_atomic_adds(D == 2 ? "grid_sampler_2d_backward" : "grid_sampler_3d_backward");
  auto expected = out_sizes(input, grid);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(expected),
              "grid_sampler backward: grad_output has sizes ", grad_output.sizes(), ", expected ",
              at::IntArrayRef(expected));
  at::Tensor x = input.contiguous();
  at::Tensor g = grid.contiguous();
  at::Tensor go = grad_output.to(input.scalar_type()).contiguous();
  at::Tensor gi = output_mask[0] ? at::zeros(x.sizes(), x.options()) : at::Tensor();
  at::Tensor gg = output_mask[1] ? at::zeros(g.sizes(), g.options()) : at::Tensor();
  guarded([&] {
    vkml::ops::grid_sample_backward(vkml_device(x), addr(go), addr(x), addr(g),
                                    gi.defined() ? addr(gi) : 0, gg.defined() ? addr(gg) : 0, s);
  });
  return {gi, gg};
}
template <int D>
std::tuple<at::Tensor&, at::Tensor&> grid_sampler_bwd_out(const at::Tensor& grad_output,
                                                          const at::Tensor& input,
                                                          const at::Tensor& grid, int64_t mode,
                                                          int64_t padding, bool align_corners,
                                                          std::array<bool, 2> output_mask,
                                                          at::Tensor& out0, at::Tensor& out1) {
  auto [gi, gg] =
      vk_grid_sampler_bwd<D>(grad_output, input, grid, mode, padding, align_corners, output_mask);
  if (gi.defined()) write_out(out0, gi);
  if (gg.defined()) write_out(out1, gg);
  return {out0, out1};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(vk_grid_sampler<2>));
  m.impl("grid_sampler_2d.out", TORCH_FN(grid_sampler_out<2>));
  m.impl("grid_sampler_2d_backward", TORCH_FN(vk_grid_sampler_bwd<2>));
  m.impl("grid_sampler_2d_backward.out", TORCH_FN(grid_sampler_bwd_out<2>));
  m.impl("grid_sampler_3d", TORCH_FN(vk_grid_sampler<3>));
  m.impl("grid_sampler_3d.out", TORCH_FN(grid_sampler_out<3>));
  m.impl("grid_sampler_3d_backward", TORCH_FN(vk_grid_sampler_bwd<3>));
  m.impl("grid_sampler_3d_backward.out", TORCH_FN(grid_sampler_bwd_out<3>));
}

}  // namespace vkml_aten
