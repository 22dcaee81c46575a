// Scans (cumsum, cumprod, cummax, cummin, logcumsumexp) against C++ references.
#include <algorithm>
#include <cmath>
#include <string>

#include "vkml/ops/scan.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ScanTest = VkmlTest;

void check_scan(Device& dev, ops::ScanOp op, int64_t outer, int64_t n, int64_t inner) {
  int64_t total = outer * n * inner;
  auto x = random_floats(total, uint32_t(total + int(op)), -2.0f, 2.0f);
  for (auto& v : x) v = std::round(v * 2.0f) / 2.0f;  // ties for max / min
  if (op == ops::ScanOp::Prod)
    for (auto& v : x) v = 1.0f + v / 64.0f;
  int64_t cap = std::max<int64_t>(total, 1);
  Buffer bx(dev, x), bo(dev, cap * 4), bi(dev, cap * 8);
  ops::ScanArgs a;
  a.op = op;
  a.in = bx.address();
  a.out = bo.address();
  a.indices = bi.address();
  a.outer = outer;
  a.n = n;
  a.inner = inner;
  ops::scan(dev, a);
  std::vector<double> want(total);
  std::vector<int64_t> want_i(total);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      int64_t best = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t off = (o * n + j) * inner + i;
        double v = x[off];
        if (j == 0) {
          acc = v;
        } else if (op == ops::ScanOp::Sum) {
          acc += v;
        } else if (op == ops::ScanOp::Prod) {
          acc *= v;
        } else if (op == ops::ScanOp::LogSumExp) {
          acc = std::max(acc, v) + std::log1p(std::exp(-std::abs(acc - v)));
        } else if (op == ops::ScanOp::Max ? v >= acc : v <= acc) {
          acc = v;
          best = j;
        }
        want[off] = acc;
        want_i[off] = best;
      }
    }
  SCOPED_TRACE("scan op " + std::to_string(int(op)) + " [" + std::to_string(outer) + ", " +
               std::to_string(n) + ", " + std::to_string(inner) + "]");
  expect_close(bo.read<float>(total), want, 1e-4, 1e-3);
  if (op == ops::ScanOp::Max || op == ops::ScanOp::Min) {
    auto got_i = bi.read<int64_t>(total);
    EXPECT_EQ(got_i, want_i);
  }
}

TEST_F(ScanTest, AllOpsBothPaths) {
  using S = ops::ScanOp;
  for (S op : {S::Sum, S::Prod, S::Max, S::Min, S::LogSumExp}) {
    check_scan(dev(), op, 3, 1000, 1);  // one chunk per row, several tiles
    check_scan(dev(), op, 2, 9000, 1);  // several chunks per row, joined by a carry pass
    check_scan(dev(), op, 2, 129, 1);   // a partial last tile
    check_scan(dev(), op, 4, 10, 3);    // thread per line
    check_scan(dev(), op, 2, 5, 1);
    check_scan(dev(), op, 0, 5, 1);
  }
}

// Long enough that the chunk totals need a chunked scan themselves, and past
// the 2^17 barriers per workgroup that lavapipe mishandles.
TEST_F(ScanTest, VeryLongRow) {
  check_scan(dev(), ops::ScanOp::Sum, 1, 1200000, 1);
  check_scan(dev(), ops::ScanOp::Max, 1, 300000, 1);
}

}  // namespace
}  // namespace vkml::test
