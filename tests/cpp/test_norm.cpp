// Normalisation kernels (statistics, forward, backward sums, data grad) against a
// double-precision reference, in batch-norm and layer-norm layouts.
#include <cmath>

#include "vkml/ops/norm.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::NormView;
using NormTest = VkmlTest;

void check(Device& dev, NormView v, int64_t naff, DType dt) {
  int64_t n = v.outer * v.c * v.inner, nstat = v.c;
  auto rt = [&](std::vector<float> a) { return dt == DType::f16 ? from_f16(to_f16(a)) : a; };
  auto up = [&](const std::vector<float>& a) {
    return dt == DType::f16 ? Buffer(dev, to_f16(a)) : Buffer(dev, a);
  };
  auto rd = [&](const Buffer& b, size_t k) {
    return dt == DType::f16 ? from_f16(b.read<uint16_t>(k)) : b.read<float>(k);
  };
  auto x = rt(random_floats(n, 11, -2.0f, 3.0f)), gy = rt(random_floats(n, 12));
  auto w = random_floats(naff, 13, 0.5f, 1.5f), b = random_floats(naff, 14);
  float eps = 1e-5f;
  // Statistics per c over (outer, inner).
  std::vector<double> mean(nstat, 0), var(nstat, 0), rstd(nstat);
  double count = double(v.outer * v.inner);
  auto elem = [&](int64_t o, int64_t c, int64_t i) { return (o * v.c + c) * v.inner + i; };
  for (int64_t c = 0; c < v.c; ++c) {
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) mean[c] += x[elem(o, c, i)] / count;
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) var[c] += std::pow(x[elem(o, c, i)] - mean[c], 2);
    var[c] /= count;
    rstd[c] = 1 / std::sqrt(var[c] + eps);
  }
  auto st = [&](int64_t e) { return (e / v.sdiv) % v.smod; };
  auto af = [&](int64_t e) { return (e / v.adiv) % v.amod; };
  std::vector<double> y(n), sa(nstat, 0), sb(nstat, 0), gx(n);
  for (int64_t e = 0; e < n; ++e) {
    double xh = (x[e] - mean[st(e)]) * rstd[st(e)];
    y[e] = xh * w[af(e)] + b[af(e)];
    sa[st(e)] += gy[e] * w[af(e)];
    sb[st(e)] += gy[e] * w[af(e)] * xh;
  }
  for (int64_t e = 0; e < n; ++e) {
    double xh = (x[e] - mean[st(e)]) * rstd[st(e)];
    gx[e] = rstd[st(e)] * (gy[e] * w[af(e)] - (sa[st(e)] + xh * sb[st(e)]) / count);
  }
  Buffer bx = up(x), bgy = up(gy), bw(dev, w), bb(dev, b);
  Buffer bm(dev, nstat * 4), br(dev, nstat * 4), bv(dev, nstat * 4), bsa(dev, nstat * 4),
      bsb(dev, nstat * 4), by(dev, n * 4), bgx(dev, n * 4);
  ops::norm_stats(dev, dt, bx.address(), bm.address(), br.address(), bv.address(), v, eps);
  ops::norm_forward(dev, dt, bx.address(), bw.address(), bb.address(), bm.address(), br.address(),
                    by.address(), v);
  ops::norm_backward_sums(dev, dt, bx.address(), bgy.address(), bw.address(), bm.address(),
                          br.address(), bsa.address(), bsb.address(), v);
  ops::norm_data_grad(dev, dt, bx.address(), bgy.address(), bw.address(), bm.address(),
                      br.address(), bsa.address(), bsb.address(), bgx.address(), v, int64_t(count));
  double tol = dt == DType::f16 ? 1e-2 : 1e-5;
  expect_close(bm.read<float>(nstat), mean, 1e-5, 1e-5, "mean");
  expect_close(bv.read<float>(nstat), var, 1e-5, 1e-5, "var");
  expect_close(br.read<float>(nstat), rstd, 1e-5, 1e-5, "rstd");
  expect_close(rd(by, n), y, tol, tol, "forward");
  expect_close(bsa.read<float>(nstat), sa, 1e-5, 1e-4, "sum gy w");
  expect_close(bsb.read<float>(nstat), sb, 1e-5, 1e-4, "sum gy w xhat");
  expect_close(rd(bgx, n), gx, tol, tol * 10, "data grad");
}

TEST_F(NormTest, BatchNormLayout) {
  for (DType dt : {DType::f32, DType::f16}) {
    check(dev(), NormView{3, 4, 10, 10, 4, 10, 4}, 4, dt);
    check(dev(), NormView{40, 3, 50, 50, 3, 50, 3}, 3, dt);  // 2000 per channel: wide groups
  }
}

TEST_F(NormTest, LayerNormLayout) {
  for (DType dt : {DType::f32, DType::f16}) check(dev(), NormView{1, 6, 33, 33, 6, 1, 33}, 33, dt);
}

TEST_F(NormTest, GroupNormLayout) {
  // N = 2, C = 4, HxW = 5, 2 groups: statistics per (n, group), affine per channel.
  check(dev(), NormView{1, 4, 10, 10, 4, 5, 4}, 4, DType::f32);
}

}  // namespace
}  // namespace vkml::test
