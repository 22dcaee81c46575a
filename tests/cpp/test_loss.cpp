// nll_loss forward and backward against a C++ reference.
#include <cmath>

#include "vkml/ops/loss.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::Reduction;
using LossTest = VkmlTest;

struct LossCase {
  int64_t n, c;
  bool weighted;
  Reduction reduction;
  int64_t ignore_index = -100;
  bool all_ignored = false;
};

void run_case(Device& dev, const LossCase& k, DType dt) {
  SCOPED_TRACE("n=" + std::to_string(k.n) + " c=" + std::to_string(k.c) +
               " weighted=" + std::to_string(k.weighted) +
               " reduction=" + std::to_string(int(k.reduction)) + " " + dtype_name(dt));
  auto rt = [&](const std::vector<float>& v) { return stored_as(dt, v); };
  auto up = [&](const std::vector<float>& v) { return upload_as(dev, dt, v); };
  auto rd = [&](const Buffer& b, size_t n) { return read_as(dt, b, n); };
  auto input = rt(random_floats(k.n * k.c, 5, -4.0f, 0.0f));
  auto weight = rt(random_floats(k.c, 6, 0.5f, 2.0f));
  std::vector<int64_t> target(k.n);
  for (int64_t i = 0; i < k.n; ++i)
    target[i] = k.all_ignored || i % 5 == 3 ? k.ignore_index : (i * 7) % k.c;

  double sum = 0, total = 0;
  std::vector<double> per(k.n, 0.0);
  for (int64_t i = 0; i < k.n; ++i) {
    if (target[i] == k.ignore_index) continue;
    double w = k.weighted ? weight[target[i]] : 1.0;
    per[i] = -w * input[i * k.c + target[i]];
    sum += per[i];
    total += w;
  }
  double reduced = k.reduction == Reduction::Mean ? sum / total : sum;

  Buffer bin = up(input), bw = up(weight), bt(dev, target);
  Buffer bout(dev, std::max<int64_t>(k.n, 1) * itemsize(dt)), btw(dev, itemsize(dt));
  ops::NllLossArgs a;
  a.dtype = dt;
  a.input = bin.address();
  a.target = bt.address();
  a.weight = k.weighted ? bw.address() : 0;
  a.n = k.n;
  a.c = k.c;
  a.ignore_index = k.ignore_index;
  a.reduction = k.reduction;
  a.output = bout.address();
  a.total_weight = btw.address();
  ops::nll_loss_forward(dev, a);
  double tol = dt == DType::f16 ? 2e-3 : 1e-5;
  expect_close(rd(btw, 1), std::vector<double>{total}, tol, tol, "total_weight");
  if (k.reduction == Reduction::None)
    expect_close(rd(bout, k.n), per, tol, tol, "output");
  else
    expect_close(rd(bout, 1), std::vector<double>{reduced}, tol, tol, "output");

  // Backward, reading total_weight from the device.
  int64_t gn = k.reduction == Reduction::None ? k.n : 1;
  auto gout = rt(random_floats(gn, 8, 0.5f, 1.5f));
  Buffer bg = up(gout);
  Buffer bgi(dev, std::max<int64_t>(k.n * k.c, 1) * itemsize(dt));
  // Poison grad_input: every element must be written.
  ops::upload(dev, bgi.address(), std::vector<uint8_t>(bgi.bytes(), 0xff).data(), bgi.bytes());
  ops::nll_loss_backward(dev, a, bg.address(), bgi.address());
  std::vector<double> want(k.n * k.c, 0.0);
  for (int64_t i = 0; i < k.n; ++i) {
    if (target[i] == k.ignore_index) continue;
    double g = k.reduction == Reduction::None ? gout[i] : gout[0];
    if (k.reduction == Reduction::Mean) g /= double(rd(btw, 1)[0]);
    want[i * k.c + target[i]] = -(k.weighted ? weight[target[i]] : 1.0) * g;
  }
  expect_close(rd(bgi, k.n * k.c), want, tol, tol, "grad_input");
}

TEST_F(LossTest, AllReductions) {
  for (DType dt : {DType::f32, DType::f16})
    for (bool weighted : {false, true})
      for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
        run_case(dev(), LossCase{37, 10, weighted, r}, dt);
        run_case(dev(), LossCase{1000, 3, weighted, r, 1}, dt);  // ignore_index is a real class
      }
}

TEST_F(LossTest, SingleSample) {
  run_case(dev(), LossCase{1, 5, true, Reduction::Mean}, DType::f32);
}

TEST_F(LossTest, EverythingIgnored) {
  LossCase k{6, 4, false, Reduction::Sum};
  k.all_ignored = true;
  run_case(dev(), k, DType::f32);  // sum 0, total weight 0
  k.reduction = Reduction::Mean;
  run_case(dev(), k, DType::f32);  // 0 / 0 = NaN
}

// A target out of range gives NaN and is raised (once) by the next read of the device.
TEST_F(LossTest, OutOfRangeTargetGivesNaNAndIsRaised) {
  std::vector<float> input = {-1, -2, -3, -4};
  std::vector<int64_t> target = {1, 7};
  Buffer bin(dev(), input), bt(dev(), target), bout(dev(), 8), btw(dev(), 4);
  ops::NllLossArgs a;
  a.input = bin.address();
  a.target = bt.address();
  a.n = 2;
  a.c = 2;
  a.output = bout.address();
  a.total_weight = btw.address();
  auto expect_raised = [&] {
    auto [kind, message] = raised_device_error(dev());
    EXPECT_EQ(kind, ErrorKind::IndexOutOfRange);
    EXPECT_EQ(message, "Target 7 is out of bounds.");
  };
  for (Reduction r : {Reduction::Sum, Reduction::Mean}) {
    a.reduction = r;
    ops::nll_loss_forward(dev(), a);
    expect_raised();
    EXPECT_TRUE(std::isnan(bout.read<float>(1)[0]));
  }
  a.reduction = Reduction::None;
  ops::nll_loss_forward(dev(), a);
  expect_raised();
  auto out = bout.read<float>(2);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_TRUE(std::isnan(out[1]));
}

}  // namespace
}  // namespace vkml::test
