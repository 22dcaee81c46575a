// Value-filled creation that needs a kernel of its own: arange, linspace,
// logspace, tril/triu_indices and the zero tensors autograd makes.
#include <ATen/Dispatch.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "fallback.h"
#include "value_bounds.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// Integer arange wrote start + i * step for i < n.
void note_arange(const at::Tensor& t, int64_t start, int64_t step, int64_t n) {
  int64_t span, last;
  if (__builtin_mul_overflow(step, n - 1, &span) || __builtin_add_overflow(start, span, &last))
    return;
  note_values(t, std::min(start, last), std::max(start, last));
}

// The CPU resizes an out of another element count only: an out holding `n` elements in
// another shape (or strides) keeps them and takes the values in its own row-major order
// (linspace(0, 3, 4, out=x.narrow(1, 1, 2)) wrote past the view here before).
bool into_shaped_out(int64_t n, at::Tensor& out, const std::function<void(at::Tensor&)>& fill) {
  if (out.numel() != n || (out.dim() == 1 && out.is_contiguous())) return false;
  at::Tensor flat = at::empty({n}, out.options());
  fill(flat);
  out.copy_(flat.view(out.sizes()));
  return true;
}

at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                       at::Tensor& out) {
  // ATen's own count, so that vkml follows the installed torch: int64 outputs count in
  // int64 from the bounds cast first (-1.5..5 by 2 gives 3 elements) up to torch 2.13,
  // and from torch 2.14 only for integral bounds (4); other dtypes count in double.
  const int64_t n = out.scalar_type() == at::kLong
                        ? at::native::compute_arange_size<int64_t>(start, end, step)
                        : at::native::compute_arange_size<double>(start, end, step);
  if (into_shaped_out(n, out, [&](at::Tensor& flat) { arange_out(start, end, step, flat); }))
    return out;
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  auto t = out.scalar_type();
  if (t == at::kByte || t == at::kChar || t == at::kShort) {
    // No 8- or 16-bit arange kernel: int32 values, narrowed by the copy (which wraps
    // like the CPU's cast of its int64 accumulator).
    at::Tensor wide = at::empty({n}, out.options().dtype(at::kInt));
    arange_out(start, end, step, wide);
    out.copy_(wide);
    return out;
  }
  if (t == at::kFloat && !(start.isIntegral(false) && step.isIntegral(false)) &&
      vkml_device(out).info().supports_fp64) {
    // float32 values as the CPU computes them, start + step * i in double, rounded once:
    // float32 arithmetic rounds differently, and arange(0, n, 1.3).long() then picks
    // other indices (torchaudio's phase vocoder does this).
    at::Tensor wide = at::empty({n}, out.options().dtype(at::kDouble));
    arange_out(start, end, step, wide);
    out.copy_(wide);
    return out;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16 ||
                                  t == at::kDouble || t == at::kLong || t == at::kInt,
                              "arange on vkml does not support ", t, " yet");
  at::Tensor target = out.is_contiguous() ? out : at::empty({n}, out.options());
  bool is_float = at::isFloatingType(t);
  auto v = [&](const at::Scalar& x) {
    return is_float ? vkml::Scalar::of(x.toDouble()) : vkml::Scalar::of_int(x.toLong());
  };
  guarded([&] { vkml::ops::arange(vkml_device(target), ref(target), v(start), v(step)); });
  if (!is_float) note_arange(target, start.toLong(), step.toLong(), n);
  if (!target.is_same(out)) out.copy_(target);
  return out;
}

// The CPU's linspace formula: start + step * i below steps / 2, end - step *
// (steps - 1 - i) from there (both ends exact). Its float32, float64 and integer
// kernels compile each value to one fused multiply-add: the linspace kernel does
// the same (integers in float64, truncated by the copy). Its float16 / bfloat16
// arithmetic rounds every product and sum to the dtype: one elementwise kernel
// each here.
void linspace_fill_16bit(at::Tensor& r, double start, double end, double step) {
  int64_t steps = r.numel(), halfway = steps / 2;
  at::Tensor lo = r.narrow(0, 0, halfway), hi = r.narrow(0, halfway, steps - halfway);
  at::arange_out(lo, 0, halfway, 1);
  lo.mul_(step).add_(start);
  at::arange_out(hi, steps - 1 - halfway, -1, -1);
  hi.mul_(step).neg_().add_(end);
}

void linspace_kernel(at::Tensor& r, double start, double end, double step) {
  bool f64 = r.scalar_type() == at::kDouble;
  guarded([&] { vkml::ops::linspace(vkml_device(r), addr(r), f64, r.numel(), start, end, step); });
}

at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps,
                         at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (into_shaped_out(steps, out, [&](at::Tensor& flat) { linspace_out(start, end, steps, flat); }))
    return out;
  auto t = out.scalar_type();
  if (at::isComplexType(t)) {
    // The CPU's complex step divides each part by steps - 1 and its products with the
    // (real) index keep the parts apart: each part is a real linspace.
    const c10::complex<double> s = start.toComplexDouble(), e = end.toComplexDouble();
    const at::TensorOptions real = out.options().dtype(c10::toRealValueType(t));
    at::Tensor re = at::empty({steps}, real), im = at::empty({steps}, real);
    linspace_out(s.real(), e.real(), steps, re);
    linspace_out(s.imag(), e.imag(), steps, im);
    at::native::resize_output(out, {steps});
    out.copy_(at::complex(re, im));
    return out;
  }
  bool integral = at::isIntegralType(t, false);
  if (integral && !vkml_device(out).info().supports_fp64) {
    return cpu_route<at::_ops::linspace_out>(start, end, steps, out);
  }
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(start);
  TORCH_CHECK(t != at::kBool, "\"linspace_vkml\" not implemented for 'Bool'");
  TORCH_CHECK_NOT_IMPLEMENTED(has_vkml_dtype(t), "linspace on vkml does not support ", t);
  at::Tensor r = out.is_contiguous() ? out : at::empty({steps}, out.options());
  if (integral) {
    // start and end in the output dtype, the step in double, as on the CPU.
    double s = 0, e = 0;
    AT_DISPATCH_INTEGRAL_TYPES(t, "linspace_vkml", [&] {
      s = double(start.to<scalar_t>());
      e = double(end.to<scalar_t>());
    });
    at::Tensor d = at::empty({steps}, out.options().dtype(at::kDouble));
    linspace_kernel(d, s, e, (e - s) / double(steps - 1));
    r.copy_(d);
  } else {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t, "linspace_vkml", [&] {
      // start, end and the step rounded to the output dtype, as on the CPU.
      scalar_t s = start.to<scalar_t>(), e = end.to<scalar_t>();
      scalar_t step = (e - s) / static_cast<scalar_t>(steps - 1);
      if (t == at::kFloat && vkml_device(out).info().supports_fp64) {
        // float32 values from float64 arithmetic (the product step * i is exact
        // there), rounded once: the fused result even where the device's float
        // fma is not fused (lavapipe).
        at::Tensor d = at::empty({steps}, out.options().dtype(at::kDouble));
        linspace_kernel(d, double(s), double(e), double(step));
        r.copy_(d);
      } else if (t == at::kFloat || t == at::kDouble) {
        linspace_kernel(r, double(s), double(e), double(step));
      } else {
        linspace_fill_16bit(r, double(s), double(e), double(step));
      }
    });
  }
  if (!r.is_same(out)) out.copy_(r);
  return out;
}

// logspace: base ** (the CPU's linspace exponents in double). GLSL has no double
// pow, so the power is taken in float32: float outputs match to rounding, while
// integer outputs (truncated powers, where one ulp can change the result) and
// float64 take the counted CPU route.
at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  auto t = out.scalar_type();
  if (!(t == at::kFloat || t == at::kHalf || t == at::kBFloat16)) {
    return cpu_route<at::_ops::logspace_out>(start, end, steps, base, out);
  }
  if (into_shaped_out(steps, out,
                      [&](at::Tensor& flat) { logspace_out(start, end, steps, base, flat); }))
    return out;
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(std::pow(base, start.toDouble()));
  double s = 0, e = 0, step = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t, "logspace_vkml", [&] {
    // As on the CPU: start, end and their difference in the output dtype.
    scalar_t ss = start.to<scalar_t>(), es = end.to<scalar_t>();
    s = double(ss);
    e = double(es);
    step = double(static_cast<scalar_t>(es - ss)) / double(steps - 1);
  });
  // The exponents in float64 where the device has it (as the CPU computes them).
  bool f64 = vkml_device(out).info().supports_fp64;
  at::Tensor x = at::empty({steps}, out.options().dtype(f64 ? at::kDouble : at::kFloat));
  linspace_kernel(x, s, e, step);
  out.copy_(at::pow(base, x.to(at::kFloat)));
  return out;
}

// Row-major (row, col) coordinates of the lower / upper triangle of a row x col
// matrix, offset diagonals. Their number follows from the arguments alone, so they are
// made on the host and uploaded: no wait for the device (a nonzero() of the triangle
// mask would read its count back), and the CPU's argument checks and messages.
at::Tensor tri_indices(bool lower, int64_t row, int64_t col, int64_t offset,
                       std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                       std::optional<at::Device> device, std::optional<bool> pin_memory) {
  auto host = at::TensorOptions().dtype(dtype).layout(layout).device(at::kCPU);
  at::Tensor idx =
      lower ? at::tril_indices(row, col, offset, host) : at::triu_indices(row, col, offset, host);
  (void)pin_memory;  // a device tensor is not pinned
  return idx.to(*device);
}
at::Tensor tril_indices(int64_t row, int64_t col, int64_t offset,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                        std::optional<at::Device> device, std::optional<bool> pin_memory) {
  return tri_indices(true, row, col, offset, dtype, layout, device, pin_memory);
}
at::Tensor triu_indices(int64_t row, int64_t col, int64_t offset,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                        std::optional<at::Device> device, std::optional<bool> pin_memory) {
  return tri_indices(false, row, col, offset, dtype, layout, device, pin_memory);
}

// The zero tensor autograd makes for gradients known to vanish (sgn, ...). CPU
// and CUDA return a storage-less ZeroTensor; a plain zero-filled tensor has the
// same values and works with every kernel.
at::Tensor efficient_zero_tensor(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                 std::optional<at::Layout> layout, std::optional<at::Device> device,
                                 std::optional<bool> pin_memory) {
  return at::zeros(
      size,
      at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
  m.impl("tril_indices", TORCH_FN(tril_indices));
  m.impl("triu_indices", TORCH_FN(triu_indices));
  m.impl("_efficientzerotensor", TORCH_FN(efficient_zero_tensor));
}

}  // namespace vkml_aten
