// ctc_loss forward and backward against a brute-force reference: every alignment path
// of a short input is enumerated, so the reference shares no recursion with the kernel.
#include <cmath>
#include <vector>

#include "vkml/ops/ctc_loss.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using CtcLossTest = VkmlTest;

struct Sample {
  int64_t input_length;
  std::vector<int64_t> target;
};

// The labels a path emits: repeats merged, then blanks dropped.
std::vector<int64_t> collapse(const std::vector<int64_t>& path, int64_t blank) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < path.size(); ++i)
    if (path[i] != blank && (i == 0 || path[i] != path[i - 1])) out.push_back(path[i]);
  return out;
}

// nll and, per (t, c), the probability mass of the paths through c at t, over all paths.
void reference(const std::vector<double>& lp, int64_t n_all, int64_t n, int64_t c, int64_t blank,
               const Sample& s, double& nll, std::vector<double>& occupancy) {
  occupancy.assign(size_t(s.input_length * c), 0.0);
  double total = 0;
  std::vector<int64_t> path(size_t(s.input_length), 0);
  int64_t paths = 1;
  for (int64_t t = 0; t < s.input_length; ++t) paths *= c;
  for (int64_t k = 0; k < paths; ++k) {
    int64_t rest = k;
    double p = 1;
    for (int64_t t = 0; t < s.input_length; ++t) {
      path[size_t(t)] = rest % c;
      rest /= c;
      p *= std::exp(lp[size_t((t * n_all + n) * c + path[size_t(t)])]);
    }
    if (collapse(path, blank) != s.target) continue;
    total += p;
    for (int64_t t = 0; t < s.input_length; ++t) occupancy[size_t(t * c + path[size_t(t)])] += p;
  }
  nll = -std::log(total);
  for (double& o : occupancy) o /= total;
}

void run(Device& dev, DType dt, int64_t blank) {
  SCOPED_TRACE(std::string(dtype_name(dt)) + " blank=" + std::to_string(blank));
  const int64_t T = 5, N = 3, C = 3, max_target = 2;
  // A target needing every step, a repeated label (a blank must separate the two),
  // an empty target; labels avoid the blank.
  const int64_t a = blank == 0 ? 1 : 0, b = blank == 2 ? 1 : 2;
  const std::vector<Sample> samples = {{5, {a, b}}, {4, {a, a}}, {5, {}}};
  std::vector<double> lp(size_t(T * N * C));
  auto raw = random_floats(lp.size(), 11, -2.0f, 2.0f);
  for (int64_t r = 0; r < T * N; ++r) {  // log-softmax over each row of C
    double z = 0;
    for (int64_t k = 0; k < C; ++k) z += std::exp(double(raw[size_t(r * C + k)]));
    for (int64_t k = 0; k < C; ++k) lp[size_t(r * C + k)] = raw[size_t(r * C + k)] - std::log(z);
  }
  std::vector<int64_t> targets, lengths;
  for (const Sample& s : samples) {
    lengths.insert(lengths.end(),
                   {s.input_length, int64_t(s.target.size()), int64_t(targets.size())});
    targets.insert(targets.end(), s.target.begin(), s.target.end());
  }
  const std::vector<double> grad_out = {0.5, -1.25, 2.0};

  auto upload = [&](const std::vector<double>& v) {
    if (dt == DType::f64) return Buffer(dev, v);
    return Buffer(dev, std::vector<float>(v.begin(), v.end()));
  };
  auto download = [&](const Buffer& buf, size_t count) {
    if (dt == DType::f64) return buf.read<double>(count);
    auto f = buf.read<float>(count);
    return std::vector<double>(f.begin(), f.end());
  };
  const size_t is = itemsize(dt);
  Buffer blp = upload(lp), btg(dev, targets), blen(dev, lengths), bgo = upload(grad_out);
  Buffer balpha(dev, N * T * (2 * max_target + 1) * is), bnll(dev, N * is);
  Buffer bgrad(dev, T * N * C * is);
  ops::CtcLossArgs args;
  args.dtype = dt;
  args.log_probs = blp.address();
  args.lp_strides[0] = N * C;
  args.lp_strides[1] = C;
  args.lp_strides[2] = 1;
  args.targets = btg.address();
  args.targets_numel = int64_t(targets.size());
  args.lengths = blen.address();
  args.t = T;
  args.n = N;
  args.c = C;
  args.max_target_length = max_target;
  args.blank = blank;
  args.log_alpha = balpha.address();
  args.nll = bnll.address();
  ops::ctc_loss_forward(dev, args);
  Buffer scratch(dev, ops::ctc_loss_backward_scratch_bytes(args));
  // Poison grad: every element must be written.
  ops::upload(dev, bgrad.address(), std::vector<uint8_t>(bgrad.bytes(), 0xff).data(),
              bgrad.bytes());
  ops::ctc_loss_backward(dev, args, bgo.address(), 1, false, scratch.address(), bgrad.address());

  std::vector<double> want_nll(N), want_grad(size_t(T * N * C), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> occupancy;
    reference(lp, N, n, C, blank, samples[size_t(n)], want_nll[size_t(n)], occupancy);
    for (int64_t t = 0; t < samples[size_t(n)].input_length; ++t)
      for (int64_t k = 0; k < C; ++k) {
        const size_t i = size_t((t * N + n) * C + k);
        want_grad[i] = (std::exp(lp[i]) - occupancy[size_t(t * C + k)]) * grad_out[size_t(n)];
      }
  }
  const double tol = dt == DType::f64 ? 1e-12 : 2e-5;
  expect_close(download(bnll, N), want_nll, tol, tol, "nll");
  expect_close(download(bgrad, size_t(T * N * C)), want_grad, tol, tol, "grad");
}

TEST_F(CtcLossTest, MatchesPathEnumeration) {
  for (int64_t blank : {0, 2}) {
    run(dev(), DType::f32, blank);
    if (dev().info().supports_fp64) run(dev(), DType::f64, blank);
  }
}

// Under zero_infinity an impossible target (two labels, one step) has a zero gradient.
TEST_F(CtcLossTest, ZeroInfinity) {
  const int64_t T = 1, N = 1, C = 3;
  Buffer blp(dev(), std::vector<float>{-1.0f, -1.5f, -0.9f});
  Buffer btg(dev(), std::vector<int64_t>{1, 2}), blen(dev(), std::vector<int64_t>{1, 2, 0});
  Buffer balpha(dev(), T * 5 * 4), bnll(dev(), 4), bgo(dev(), std::vector<float>{1.0f});
  Buffer bgrad(dev(), T * N * C * 4);
  ops::CtcLossArgs args;
  args.log_probs = blp.address();
  args.lp_strides[0] = N * C;
  args.lp_strides[1] = C;
  args.lp_strides[2] = 1;
  args.targets = btg.address();
  args.targets_numel = 2;
  args.lengths = blen.address();
  args.t = T;
  args.n = N;
  args.c = C;
  args.max_target_length = 2;
  args.log_alpha = balpha.address();
  args.nll = bnll.address();
  ops::ctc_loss_forward(dev(), args);
  EXPECT_EQ(bnll.read<float>(1)[0], INFINITY);
  Buffer scratch(dev(), ops::ctc_loss_backward_scratch_bytes(args));
  ops::ctc_loss_backward(dev(), args, bgo.address(), 0, true, scratch.address(), bgrad.address());
  expect_close(bgrad.read<float>(3), std::vector<float>(3, 0.0f), 0, 0, "grad");
}

}  // namespace
}  // namespace vkml::test
