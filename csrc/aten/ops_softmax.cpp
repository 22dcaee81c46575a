// softmax / log_softmax and their backward passes.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "fallback.h"
#include "op_helpers.h"
#include "vkml/ops/softmax.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

vkml::ops::SoftmaxShape shape_of(const at::Tensor& t, int64_t dim) {
  vkml::ops::SoftmaxShape s;
  if (t.dim() == 0) return s;
  for (int64_t d = 0; d < dim; ++d) s.outer *= t.size(d);
  s.dim = t.size(dim);
  for (int64_t d = dim + 1; d < t.dim(); ++d) s.inner *= t.size(d);
  return s;
}

void check_softmax_dtype(const char* name, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kDouble, name,
                              " on vkml supports float32, float16 and float64, got ", t);
}

// The kernel walks a row of the last dim with one workgroup (passes over it: max, sum,
// write), each thread a 256th of it: a row too long for a loop-limited driver (lavapipe's
// 65535 iterations; log_softmax over 9.4M elements came back wrong) is composed of the
// native reductions, which split long rows over many workgroups.
bool row_too_long(const at::Tensor& t, int64_t d, int passes) {
  return d + 1 == t.dim() && past_loop_limit(t, t.size(d) / 256 * passes + passes);
}

at::Tensor composed_forward(const at::Tensor& x, int64_t d, bool log) {
  at::Tensor z = x - x.amax(d, /*keepdim=*/true);
  if (log) return z - z.exp().sum(d, /*keepdim=*/true).log();
  at::Tensor e = z.exp();
  return e / e.sum(d, /*keepdim=*/true);
}

at::Tensor forward(const char* name, const at::Tensor& self, int64_t dim, bool half_to_float,
                   bool log) {
  int64_t d = at::maybe_wrap_dim(dim, self.dim());
  if (line_walk_too_long(self, d, 3))  // max, sum, write
    return forward(name, self.movedim(d, -1), -1, half_to_float, log).movedim(-1, d).contiguous();
  if (row_too_long(self, d, 3)) {
    at::Tensor x = half_to_float ? self.to(at::kFloat) : self;
    if (x.scalar_type() == at::kBFloat16)
      return composed_forward(x.to(at::kFloat), d, log).to(x.scalar_type());
    return composed_forward(x, d, log);
  }
  at::Tensor in = self.contiguous();
  if (half_to_float) {
    TORCH_CHECK(self.scalar_type() == at::kHalf, "conversion is supported for Half type only");
    in = in.to(at::kFloat);
  }
  if (in.scalar_type() == at::kBFloat16) {  // fp32 math, one rounding at the end
    return forward(name, in.to(at::kFloat), dim, false, log).to(at::kBFloat16);
  }
  check_softmax_dtype(name, in.scalar_type());
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (out.numel() == 0) return out;
  guarded([&] {
    vkml::ops::softmax(vkml_device(in), to_vkml(in.scalar_type()), addr(in), addr(out),
                       shape_of(in, d), log);
  });
  return out;
}

at::Tensor backward(const char* name, const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                    at::ScalarType input_dtype, bool log) {
  int64_t d = at::maybe_wrap_dim(dim, grad.dim());
  if (line_walk_too_long(grad, d, 2))  // the dot, the write
    return backward(name, grad.movedim(d, -1), output.movedim(d, -1), -1, input_dtype, log)
        .movedim(-1, d)
        .contiguous();
  at::Tensor g = grad.contiguous(), y = output.contiguous();
  if (g.scalar_type() != y.scalar_type()) g = g.to(y.scalar_type());
  if (row_too_long(y, d, 2)) {
    at::Tensor gi =
        log ? g - y.exp() * g.sum(d, /*keepdim=*/true) : y * (g - (g * y).sum(d, /*keepdim=*/true));
    return input_dtype == gi.scalar_type() ? gi : gi.to(input_dtype);
  }
  if (y.scalar_type() == at::kBFloat16) {
    return backward(name, g.to(at::kFloat), y.to(at::kFloat), dim, input_dtype, log);
  }
  check_softmax_dtype(name, y.scalar_type());
  at::Tensor gi = at::empty(y.sizes(), y.options());
  if (gi.numel() > 0)
    guarded([&] {
      vkml::ops::softmax_backward(vkml_device(y), to_vkml(y.scalar_type()), addr(g), addr(y),
                                  addr(gi), shape_of(y, d), log);
    });
  return input_dtype == gi.scalar_type() ? gi : gi.to(input_dtype);
}

// float64 needs shaderFloat64; without it, it takes the counted CPU route.
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  if (float64_without_arithmetic(self))
    return cpu_route<at::_ops::_softmax>(self, dim, half_to_float);
  return forward("softmax", self, dim, half_to_float, false);
}
at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  return write_out_exact(out, softmax(self, dim, half_to_float));
}
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  if (float64_without_arithmetic(self))
    return cpu_route<at::_ops::_log_softmax>(self, dim, half_to_float);
  return forward("log_softmax", self, dim, half_to_float, true);
}
at::Tensor& log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float,
                            at::Tensor& out) {
  return write_out_exact(out, log_softmax(self, dim, half_to_float));
}
at::Tensor softmax_bwd(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                       at::ScalarType input_dtype) {
  if (float64_without_arithmetic(output)) {
    return cpu_route<at::_ops::_softmax_backward_data>(grad, output, dim, input_dtype);
  }
  return backward("softmax_backward", grad, output, dim, input_dtype, false);
}
at::Tensor& softmax_bwd_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            at::ScalarType input_dtype, at::Tensor& out) {
  return write_out_exact(out, softmax_bwd(grad, output, dim, input_dtype));
}
at::Tensor log_softmax_bwd(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                           at::ScalarType input_dtype) {
  if (float64_without_arithmetic(output)) {
    return cpu_route<at::_ops::_log_softmax_backward_data>(grad, output, dim, input_dtype);
  }
  return backward("log_softmax_backward", grad, output, dim, input_dtype, true);
}
at::Tensor& log_softmax_bwd_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                at::ScalarType input_dtype, at::Tensor& out) {
  return write_out_exact(out, log_softmax_bwd(grad, output, dim, input_dtype));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_softmax", TORCH_FN(softmax));
  m.impl("_softmax.out", TORCH_FN(softmax_out));
  m.impl("_log_softmax", TORCH_FN(log_softmax));
  m.impl("_log_softmax.out", TORCH_FN(log_softmax_out));
  m.impl("_softmax_backward_data", TORCH_FN(softmax_bwd));
  m.impl("_softmax_backward_data.out", TORCH_FN(softmax_bwd_out));
  m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_bwd));
  m.impl("_log_softmax_backward_data.out", TORCH_FN(log_softmax_bwd_out));
}

}  // namespace vkml_aten
