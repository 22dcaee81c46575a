#include "vkml/ops/grid_sample.h"

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/grid_sample_push.h"

namespace vkml::ops {

namespace {

using Push = grid_sample_detail::Push;

void launch(Device& dev, Shader shader, Push p, const GridSampleShape& s) {
  VKML_CHECK_ARG(s.dims == 2 || s.dims == 3, "grid_sampler: 2 or 3 spatial dims");
  VKML_CHECK_ARG(grid_sample_supports(dev, s.dtype, p.grad_input != 0),
                 "grid_sampler: no kernel for this dtype on this device");
  VKML_CHECK_ARG(s.dims == 2 || s.mode != GridInterp::Bicubic,
                 "grid_sampler(): bicubic interpolation only supports 4D input");
  VKML_CHECK_ARG(s.dims == 3 || (s.id == 1 && s.od == 1), "grid_sampler: 2-d needs unit depth");
  int64_t points = s.n * s.od * s.oh * s.ow;
  if (points == 0 || s.c == 0) return;
  VKML_CHECK_ARG(s.id > 0 && s.ih > 0 && s.iw > 0, "grid_sampler: empty input plane");
  check_32bit_indexing(points * s.dims, s.n * s.c * s.id * s.ih * s.iw, "grid_sampler");
  check_32bit_indexing(points * s.c, points * s.c, "grid_sampler");
  p.n = uint32_t(s.n);
  p.c = uint32_t(s.c);
  p.id = uint32_t(s.id);
  p.ih = uint32_t(s.ih);
  p.iw = uint32_t(s.iw);
  p.od = uint32_t(s.od);
  p.oh = uint32_t(s.oh);
  p.ow = uint32_t(s.ow);
  p.mode = int32_t(s.mode);
  p.padding = int32_t(s.padding);
  p.align_corners = s.align_corners ? 1u : 0u;
  p.dims = uint32_t(s.dims);
  // All of s.dtype and contiguous: input / grad_input [n, c, id, ih, iw], grid /
  // grad_grid [n, od, oh, ow, dims], out / grad_out [n, c, od, oh, ow].
  const int64_t in_numel = s.n * s.c * s.id * s.ih * s.iw;
  const size_t item = itemsize(s.dtype);
  Access access;
  access.read(span_elems(p.src, in_numel, item));
  access.read(span_elems(p.grid, points * s.dims, item));
  const Span out = span_elems(p.dst, points * s.c, item);
  if (p.flags == 0) {
    access.write(out);
  } else {
    access.read(out);
    access.update(span_elems(p.grad_input, in_numel, item));  // accumulated into
    access.write(span_elems(p.grad_grid, points * s.dims, item));
  }
  dispatch_1d(dev, dev.pipelines().get(shader), &p, sizeof(p), uint64_t(points), GRID_SAMPLE_WG,
              &access);
}

}  // namespace

bool grid_sample_supports(const Device& dev, DType dtype, bool input_gradient) {
  if (dtype == DType::f32) return true;
  return dtype == DType::f64 && dev.info().supports_fp64 &&
         (!input_gradient || dev.info().supports_int64_atomics);
}

void grid_sample(Device& dev, uint64_t input, uint64_t grid, uint64_t out,
                 const GridSampleShape& s) {
  Push p{};
  p.src = input;
  p.grid = grid;
  p.dst = out;
  launch(dev, s.dtype == DType::f64 ? Shader::grid_sample_fwd_f64 : Shader::grid_sample_fwd, p, s);
}

void grid_sample_backward(Device& dev, uint64_t grad_out, uint64_t input, uint64_t grid,
                          uint64_t grad_input, uint64_t grad_grid, const GridSampleShape& s) {
  Push p{};
  p.src = input;
  p.grid = grid;
  p.dst = grad_out;
  p.grad_input = grad_input;
  p.grad_grid = grad_grid;
  p.flags = (grad_input ? GRID_SAMPLE_GRAD_INPUT : 0) | (grad_grid ? GRID_SAMPLE_GRAD_GRID : 0);
  if (p.flags == 0) return;
  launch(dev, s.dtype == DType::f64 ? Shader::grid_sample_bwd_f64 : Shader::grid_sample_bwd, p, s);
}

}  // namespace vkml::ops
