// Softmax / log-softmax forward and backward against a double-precision reference.
#include <cmath>

#include "vkml/ops/softmax.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::SoftmaxShape;
using SoftmaxTest = VkmlTest;

std::string describe(SoftmaxShape s, bool log, DType dt) {
  return std::string(log ? "log_softmax " : "softmax ") + dtype_name(dt) + " [" +
         std::to_string(s.outer) + ", " + std::to_string(s.dim) + ", " + std::to_string(s.inner) +
         "]";
}

std::vector<double> ref_forward(const std::vector<float>& x, SoftmaxShape s, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t j) { return (o * s.dim + j) * s.inner + i; };
      double m = -INFINITY;
      bool nan = false;
      for (int64_t j = 0; j < s.dim; ++j) {
        nan |= std::isnan(x[at(j)]);
        m = std::max(m, double(x[at(j)]));
      }
      double sum = 0;
      for (int64_t j = 0; j < s.dim; ++j) sum += std::exp(double(x[at(j)]) - m);
      for (int64_t j = 0; j < s.dim; ++j) {
        double v = double(x[at(j)]) - m;
        y[at(j)] = nan ? NAN : log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return y;
}

std::vector<double> ref_backward(const std::vector<float>& g, const std::vector<float>& y,
                                 SoftmaxShape s, bool log) {
  std::vector<double> gi(g.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t j) { return (o * s.dim + j) * s.inner + i; };
      double acc = 0;
      for (int64_t j = 0; j < s.dim; ++j) acc += log ? g[at(j)] : double(g[at(j)]) * y[at(j)];
      for (int64_t j = 0; j < s.dim; ++j)
        gi[at(j)] =
            log ? g[at(j)] - std::exp(double(y[at(j)])) * acc : double(y[at(j)]) * (g[at(j)] - acc);
    }
  return gi;
}

std::vector<float> round_trip(DType dt, std::vector<float> v) {
  return dt == DType::f16 ? from_f16(to_f16(v)) : v;
}

Buffer upload(Device& dev, DType dt, const std::vector<float>& v) {
  return dt == DType::f16 ? Buffer(dev, to_f16(v)) : Buffer(dev, v);
}

std::vector<float> read(const Buffer& b, DType dt, size_t n) {
  return dt == DType::f16 ? from_f16(b.read<uint16_t>(n)) : b.read<float>(n);
}

void check(Device& dev, SoftmaxShape s, DType dt, bool special_values = false) {
  int64_t n = s.outer * s.dim * s.inner;
  auto x = round_trip(dt, random_floats(n, uint32_t(n), -8.0f, 8.0f));
  if (special_values && n > 0) {
    for (int64_t i = 0; i < n; i += 7) x[i] = -INFINITY;  // masked entries
    x[n / 2] = NAN;                                       // poisons one slice
  }
  auto g = round_trip(dt, random_floats(n, uint32_t(n) + 9));
  double tol = dt == DType::f16 ? 4e-3 : 2e-5;
  for (bool log : {false, true}) {
    SCOPED_TRACE(describe(s, log, dt));
    Buffer bx = upload(dev, dt, x), by(dev, std::max<int64_t>(n, 1) * itemsize(dt));
    ops::softmax(dev, dt, bx.address(), by.address(), s, log);
    auto want = ref_forward(x, s, log);
    auto got = read(by, dt, n);
    expect_close(got, want, tol, tol, "forward");

    // Backward from the reference output (rounded as the device stores it).
    std::vector<float> y(want.begin(), want.end());
    y = round_trip(dt, y);
    Buffer bg = upload(dev, dt, g), byy = upload(dev, dt, y);
    Buffer bgi(dev, std::max<int64_t>(n, 1) * itemsize(dt));
    ops::softmax_backward(dev, dt, bg.address(), byy.address(), bgi.address(), s, log);
    expect_close(read(bgi, dt, n), ref_backward(g, y, s, log), tol, tol * 10, "backward");
  }
}

TEST_F(SoftmaxTest, Float32Shapes) {
  for (SoftmaxShape s : {SoftmaxShape{4, 1000, 1},  // workgroup per row
                         SoftmaxShape{2, 5000, 1},  // long rows
                         SoftmaxShape{3, 100, 1},   // short workgroup rows
                         SoftmaxShape{10, 5, 1},    // thread per row
                         SoftmaxShape{3, 20, 7},    // thread per (outer, inner)
                         SoftmaxShape{1, 1, 1}, SoftmaxShape{2, 300, 33}})
    check(dev(), s, DType::f32);
}

TEST_F(SoftmaxTest, InfinitiesAndNaN) {
  for (SoftmaxShape s : {SoftmaxShape{4, 1000, 1}, SoftmaxShape{5, 30, 4}, SoftmaxShape{6, 9, 1}})
    check(dev(), s, DType::f32, true);
}

TEST_F(SoftmaxTest, FullyMaskedRowIsNaN) {
  SoftmaxShape s{2, 100, 1};
  std::vector<float> x(200, -INFINITY);
  for (int j = 100; j < 200; ++j) x[j] = float(j % 3);
  Buffer bx(dev(), x), by(dev(), 800);
  ops::softmax(dev(), DType::f32, bx.address(), by.address(), s, false);
  auto got = by.read<float>();
  for (int j = 0; j < 100; ++j) EXPECT_TRUE(std::isnan(got[j])) << j;
  auto want = ref_forward(x, s, false);
  expect_close(std::vector<float>(got.begin() + 100, got.end()),
               std::vector<double>(want.begin() + 100, want.end()), 2e-5, 2e-5);
}

TEST_F(SoftmaxTest, Float16) {
  for (SoftmaxShape s : {SoftmaxShape{4, 1000, 1}, SoftmaxShape{10, 5, 1}, SoftmaxShape{3, 20, 7}})
    check(dev(), s, DType::f16);
}

TEST_F(SoftmaxTest, EmptyIsANoOp) {
  for (SoftmaxShape s : {SoftmaxShape{0, 5, 1}, SoftmaxShape{3, 0, 2}, SoftmaxShape{3, 4, 0}})
    check(dev(), s, DType::f32);
}

}  // namespace
}  // namespace vkml::test
