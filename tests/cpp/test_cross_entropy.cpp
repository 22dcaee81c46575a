// The fused cross entropy (forward, reductions, backward) against a double-precision
// reference of log_softmax + nll_loss with label smoothing.
#include <cmath>

#include "vkml/ops/cross_entropy.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::Reduction;
using CrossEntropyTest = VkmlTest;

struct CrossEntropyCase {
  int64_t n, c;
  bool weighted;
  float smoothing;
  Reduction reduction;
};

struct Reference {
  std::vector<double> rows;  // per-row losses
  double total = 0;          // counted weight
  std::vector<double> grad;  // d sum(g_i * loss_i) / d x, g = gout per row
};

constexpr int64_t kIgnore = -100;

Reference reference(const CrossEntropyCase& k, const std::vector<float>& x,
                    const std::vector<int64_t>& t, const std::vector<float>& w,
                    const std::vector<double>& g) {
  Reference r;
  r.rows.assign(k.n, 0.0);
  r.grad.assign(k.n * k.c, 0.0);
  auto wt = [&](int64_t j) { return k.weighted ? double(w[j]) : 1.0; };
  double wsum = 0;
  for (int64_t j = 0; j < k.c; ++j) wsum += wt(j);
  for (int64_t i = 0; i < k.n; ++i) {
    if (t[i] == kIgnore) continue;
    const float* row = &x[i * k.c];
    double m = -INFINITY, s = 0, sx = 0;
    for (int64_t j = 0; j < k.c; ++j) m = std::max(m, double(row[j]));
    for (int64_t j = 0; j < k.c; ++j) s += std::exp(row[j] - m);
    double lse = m + std::log(s);
    for (int64_t j = 0; j < k.c; ++j) sx += wt(j) * (lse - row[j]);
    double e = k.smoothing;
    r.rows[i] = (1 - e) * wt(t[i]) * (lse - row[t[i]]) + e / k.c * sx;
    r.total += wt(t[i]);
    for (int64_t j = 0; j < k.c; ++j) {
      double p = std::exp(row[j] - lse);
      double d = (1 - e) * wt(t[i]) * (p - (j == t[i] ? 1 : 0)) + e / k.c * (wsum * p - wt(j));
      r.grad[i * k.c + j] = g[i] * d;
    }
  }
  return r;
}

void run_case(Device& dev, const CrossEntropyCase& k, DType dt) {
  SCOPED_TRACE("n=" + std::to_string(k.n) + " c=" + std::to_string(k.c) +
               " weighted=" + std::to_string(k.weighted) + " e=" + std::to_string(k.smoothing) +
               " reduction=" + std::to_string(int(k.reduction)) + " " + dtype_name(dt));
  auto rt = [&](const std::vector<float>& v) { return stored_as(dt, v); };
  auto up = [&](const std::vector<float>& v) { return upload_as(dev, dt, v); };
  auto rd = [&](const Buffer& b, size_t n) { return read_as(dt, b, n); };
  auto x = rt(random_floats(k.n * k.c, 3, -6.0f, 6.0f));
  auto w = rt(random_floats(k.c, 4, 0.5f, 2.0f));
  std::vector<int64_t> t(k.n);
  for (int64_t i = 0; i < k.n; ++i) t[i] = i % 4 == 1 ? kIgnore : (i * 13) % k.c;
  const bool none = k.reduction == Reduction::None;
  auto gout = rt(random_floats(none ? k.n : 1, 5, 0.5f, 1.5f));

  Buffer bx = up(x), bw = up(w), bt(dev, t), bg = up(gout);
  float wsum = 0;
  for (float v : w) wsum += v;
  Buffer bws(dev, std::vector<float>{wsum});
  Buffer blse(dev, k.n * 4), brows(dev, k.n * 4), btotal(dev, 4);
  Buffer bout(dev, (none ? k.n : 1) * itemsize(dt)), bgi(dev, k.n * k.c * itemsize(dt));
  ops::CrossEntropyArgs a;
  a.dtype = dt;
  a.scores = bx.address();
  a.target = bt.address();
  a.weight = k.weighted ? bw.address() : 0;
  a.weight_sum = k.weighted && k.smoothing != 0.0f ? bws.address() : 0;
  a.n = k.n;
  a.c = k.c;
  a.ignore_index = kIgnore;
  a.label_smoothing = k.smoothing;
  a.reduction = k.reduction;
  a.lse = blse.address();
  a.total_weight = btotal.address();
  ops::cross_entropy_forward(dev, a, bout.address(), none ? 0 : brows.address());
  // Poison grad_input: every element must be written, ignored rows too.
  ops::upload(dev, bgi.address(), std::vector<uint8_t>(bgi.bytes(), 0xff).data(), bgi.bytes());
  ops::cross_entropy_backward(dev, a, bg.address(), bgi.address());

  std::vector<double> g(k.n);
  Reference r0 = reference(k, x, t, w, std::vector<double>(k.n, 1.0));
  double scale = k.reduction == Reduction::Mean ? 1.0 / r0.total : 1.0;
  for (int64_t i = 0; i < k.n; ++i) g[i] = (none ? gout[i] : gout[0]) * scale;
  Reference r = reference(k, x, t, w, g);
  double tol = dt == DType::f16 ? 3e-3 : 2e-5;
  if (none) {
    expect_close(rd(bout, k.n), r.rows, tol, tol, "rows");
  } else {
    double sum = 0;
    for (double v : r.rows) sum += v;
    expect_close(rd(bout, 1), std::vector<double>{sum * scale}, tol, tol, "output");
    expect_close(btotal.read<float>(1), std::vector<double>{r.total}, 1e-6, 1e-6, "total");
  }
  expect_close(rd(bgi, k.n * k.c), r.grad, tol, tol, "grad_input");
}

TEST_F(CrossEntropyTest, MatchesReference) {
  for (DType dt : {DType::f32, DType::f16})
    for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum})
      for (bool weighted : {false, true})
        for (float e : {0.0f, 0.25f}) {
          run_case(dev(), CrossEntropyCase{9, 7, weighted, e, red},
                   dt);  // rows shorter than a group
          run_case(dev(), CrossEntropyCase{5, 3001, weighted, e, red}, dt);  // 256-thread rows
        }
}

TEST_F(CrossEntropyTest, EmptyBatchAndSpecialRows) {
  // n == 0: the sum is 0 and the mean 0 / 0.
  Buffer bout(dev(), 4), btotal(dev(), 4), bt(dev(), std::vector<int64_t>{0});
  ops::CrossEntropyArgs a;
  a.c = 4;
  a.target = bt.address();
  a.total_weight = btotal.address();
  a.reduction = Reduction::Sum;
  ops::cross_entropy_forward(dev(), a, bout.address(), 0);
  EXPECT_EQ(bout.read<float>(1)[0], 0.0f);
  a.reduction = Reduction::Mean;
  ops::cross_entropy_forward(dev(), a, bout.address(), 0);
  EXPECT_TRUE(std::isnan(bout.read<float>(1)[0]));

  // -inf scores count nothing; NaN, +inf, an all -inf row and a target out of
  // range give NaN, and the target out of range is raised by the next read.
  const float inf = INFINITY;
  std::vector<float> x = {0, -inf, 1, NAN, 0, 1, inf, 0, 1, -inf, -inf, -inf, 0, 1, 2};
  Buffer bx(dev(), x), bt5(dev(), std::vector<int64_t>{0, 1, 1, 2, 7}), blse(dev(), 20),
      bo(dev(), 20);
  a.scores = bx.address();
  a.target = bt5.address();
  a.lse = blse.address();
  a.n = 5;
  a.c = 3;
  a.reduction = Reduction::None;
  ops::cross_entropy_forward(dev(), a, bo.address(), 0);
  auto [kind, message] = raised_device_error(dev());
  EXPECT_EQ(kind, ErrorKind::IndexOutOfRange);
  EXPECT_EQ(message, "Target 7 is out of bounds.");
  auto out = bo.read<float>(5);
  EXPECT_NEAR(out[0], std::log(1 + std::exp(1.0)), 1e-6);
  for (int i = 1; i < 5; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
}

}  // namespace
}  // namespace vkml::test
