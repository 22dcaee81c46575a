// Max / average / adaptive pooling forward and backward against a C++ reference (2-d).
#include <algorithm>
#include <cmath>

#include "vkml/ops/pool.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::PoolShape;
using PoolTest = VkmlTest;

// Input range [lo, hi) of output o along one dim, and the padded size (avg).
void window(const PoolShape& s, int d, bool max, int64_t o, int64_t& lo, int64_t& hi,
            int64_t& padded) {
  if (s.adaptive) {
    lo = o * s.in[d] / s.out[d];
    hi = ((o + 1) * s.in[d] + s.out[d] - 1) / s.out[d];
    padded = hi - lo;
  } else if (max) {
    lo = o * s.stride[d] - s.pad[d];
    hi = std::min(lo + (s.kernel[d] - 1) * s.dilation[d] + 1, s.in[d]);
    while (lo < 0) lo += s.dilation[d];
    padded = 0;
  } else {
    lo = o * s.stride[d] - s.pad[d];
    hi = std::min(lo + s.kernel[d], s.in[d] + s.pad[d]);
    padded = hi - lo;
    lo = std::max<int64_t>(lo, 0);
    hi = std::min(hi, s.in[d]);
  }
}

void check(Device& dev, PoolShape s, bool max) {
  int64_t H = s.in[1], W = s.in[2], OH = s.out[1], OW = s.out[2];
  int64_t ni = s.planes * H * W, no = s.planes * OH * OW;
  auto x = random_floats(ni, 7, -5.0f, 5.0f), gy = random_floats(no, 8);
  std::vector<double> y(no), gx(ni, 0.0);
  std::vector<int64_t> idx(no);
  for (int64_t p = 0; p < s.planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0, h1, ph, w0, w1, pw, o = (p * OH + oh) * OW + ow;
        window(s, 1, max, oh, h0, h1, ph);
        window(s, 2, max, ow, w0, w1, pw);
        int64_t dh = max && !s.adaptive ? s.dilation[1] : 1;
        int64_t dw = max && !s.adaptive ? s.dilation[2] : 1;
        double m = -INFINITY, sum = 0;
        int64_t mi = h0 * W + w0;
        for (int64_t h = h0; h < h1; h += dh)
          for (int64_t w = w0; w < w1; w += dw) {
            double v = x[p * H * W + h * W + w];
            sum += v;
            if (v > m) m = v, mi = h * W + w;
          }
        double div = s.divisor                           ? s.divisor
                     : s.count_include_pad || s.adaptive ? double(ph * pw)
                                                         : double((h1 - h0) * (w1 - w0));
        y[o] = max ? m : sum / div;
        idx[o] = mi;
        if (max) {
          gx[p * H * W + mi] += gy[o];
        } else {
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) gx[p * H * W + h * W + w] += gy[o] / div;
        }
      }
  Buffer bx(dev, x), bgy(dev, gy), by(dev, no * 4 + 4), bi(dev, no * 8 + 8), bgx(dev, ni * 4 + 4);
  if (max) {
    ops::max_pool(dev, DType::f32, bx.address(), by.address(), bi.address(), s);
    ops::max_pool_backward(dev, DType::f32, bgy.address(), bi.address(), bgx.address(), s);
    auto got_idx = bi.read<int64_t>(no);
    EXPECT_EQ(got_idx, idx);
  } else {
    ops::avg_pool(dev, DType::f32, bx.address(), by.address(), s);
    ops::avg_pool_backward(dev, DType::f32, bgy.address(), bgx.address(), s);
  }
  expect_close(by.read<float>(no), y, 1e-6, 1e-6, "forward");
  expect_close(bgx.read<float>(ni), gx, 1e-5, 1e-5, "backward");
}

PoolShape fixed(int64_t h, int64_t w, int64_t k, int64_t st, int64_t pad, int64_t dil, bool ceil) {
  PoolShape s;
  s.planes = 3;
  s.in[1] = h, s.in[2] = w;
  for (int d = 1; d < 3; ++d) {
    s.kernel[d] = k, s.stride[d] = st, s.pad[d] = pad, s.dilation[d] = dil;
    int64_t num = s.in[d] + 2 * pad - dil * (k - 1) - 1 + (ceil ? st - 1 : 0);
    s.out[d] = num / st + 1;
    if (ceil && (s.out[d] - 1) * st >= s.in[d] + pad) --s.out[d];
  }
  return s;
}

TEST_F(PoolTest, MaxPool) {
  check(dev(), fixed(7, 8, 3, 2, 0, 1, false), true);
  check(dev(), fixed(7, 8, 3, 2, 1, 1, true), true);
  check(dev(), fixed(9, 9, 2, 1, 1, 2, false), true);
}

TEST_F(PoolTest, AvgPool) {
  check(dev(), fixed(7, 8, 3, 2, 1, 1, false), false);
  PoolShape s = fixed(7, 8, 3, 2, 1, 1, true);
  s.count_include_pad = false;
  check(dev(), s, false);
  s.divisor = 4;
  check(dev(), s, false);
}

TEST_F(PoolTest, Adaptive) {
  for (bool max : {true, false}) {
    PoolShape s;
    s.planes = 2, s.adaptive = true;
    s.in[1] = 7, s.in[2] = 9, s.out[1] = 3, s.out[2] = 4;
    check(dev(), s, max);
    s.out[1] = 7, s.out[2] = 10;  // more outputs than inputs: overlapping windows
    check(dev(), s, max);
  }
}

}  // namespace
}  // namespace vkml::test
