#include "upsample_float64.h"

#include <algorithm>
#include <cmath>

namespace vkml_aten::upsample_f64 {
namespace {

using vkml::ops::InterpMode;

double cubic1(double x, double a) { return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0; }
double cubic2(double x, double a) { return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a; }

double aa_filter(InterpMode mode, double x) {
  x = std::abs(x);
  if (mode == InterpMode::AaLinear) return x < 1.0 ? 1.0 - x : 0.0;
  if (x < 1.0) return cubic1(x, -0.5);
  return x < 2.0 ? cubic2(x, -0.5) : 0.0;
}

// The [out, in] matrix of one pass, on t's device: row o holds the weights of output o.
at::Tensor weights(int64_t in, int64_t out, InterpMode mode, bool align, double scale,
                   const at::Tensor& t) {
  at::Tensor m = at::zeros({out, in}, at::TensorOptions().dtype(at::kDouble));
  double* w = m.data_ptr<double>();
  const int64_t last = in - 1;
  for (int64_t o = 0; o < out; ++o) {
    double* row = w + o * in;
    if (mode == InterpMode::Linear) {
      double real = align ? scale * double(o) : std::max(scale * (double(o) + 0.5) - 0.5, 0.0);
      int64_t i0 = std::min(int64_t(real), last);
      double l1 = std::clamp(real - double(i0), 0.0, 1.0);
      if (in == out) {  // the CPU's identity shortcut
        i0 = o;
        l1 = 0.0;
      }
      row[i0] += 1.0 - l1;
      row[i0 + (i0 < last ? 1 : 0)] += l1;
    } else if (mode == InterpMode::Cubic) {
      double real = align ? scale * double(o) : scale * (double(o) + 0.5) - 0.5;
      int64_t i0 = std::min(int64_t(std::floor(real)), last);
      double t1 = std::clamp(real - double(i0), 0.0, 1.0), t2 = 1.0 - t1;
      const double a = -0.75;
      const double c[4] = {cubic2(t1 + 1.0, a), cubic1(t1, a), cubic1(t2, a), cubic2(t2 + 1.0, a)};
      for (int64_t k = 0; k < 4; ++k) row[std::clamp(i0 - 1 + k, int64_t(0), last)] += c[k];
    } else {
      const double half = mode == InterpMode::AaLinear ? 1.0 : 2.0;
      const double support = scale >= 1.0 ? half * scale : half;
      const double center = scale * (double(o) + 0.5);
      const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
      const int64_t lo = std::max(int64_t(center - support + 0.5), int64_t(0));
      const int64_t hi = std::min(int64_t(center + support + 0.5), in);
      double total = 0.0;
      for (int64_t j = lo; j < hi; ++j)
        total += row[j] = aa_filter(mode, (double(j) - center + 0.5) * invscale);
      if (total != 0.0)
        for (int64_t j = lo; j < hi; ++j) row[j] /= total;
    }
  }
  return m.to(t.device());
}

// t as [outer, size(dim), inner].
at::Tensor as_three_dims(const at::Tensor& t, int64_t dim) {
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= t.size(d);
  return t.reshape({outer, t.size(dim), -1});
}

at::Tensor with_size(const at::Tensor& r, const at::Tensor& like, int64_t dim, int64_t n) {
  std::vector<int64_t> sizes(like.sizes().begin(), like.sizes().end());
  sizes[dim] = n;
  return r.reshape(sizes);
}

}  // namespace

at::Tensor pass(const at::Tensor& x, int64_t dim, int64_t out, InterpMode mode, bool align_corners,
                double scale) {
  at::Tensor m = weights(x.size(dim), out, mode, align_corners, scale, x);
  return with_size(at::matmul(m, as_three_dims(x, dim)), x, dim, out);
}

at::Tensor pass_backward(const at::Tensor& g, int64_t dim, int64_t in, InterpMode mode,
                         bool align_corners, double scale) {
  at::Tensor m = weights(in, g.size(dim), mode, align_corners, scale, g);
  return with_size(at::matmul(m.t(), as_three_dims(g, dim)), g, dim, in);
}

}  // namespace vkml_aten::upsample_f64
