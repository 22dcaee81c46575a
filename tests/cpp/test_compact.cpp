// Compaction (nonzero, masked_select, masked_scatter) against C++ references.
#include <algorithm>

#include "vkml/ops/compact.h"
#include "vkml/ops/scan.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using CompactTest = VkmlTest;

TEST_F(CompactTest, NonzeroSelectScatter) {
  const int64_t n = 1000;
  std::vector<int32_t> flags(n), prefix(n);
  std::vector<float> x = random_floats(n, 11);
  int32_t run = 0;
  for (int64_t i = 0; i < n; ++i) {
    flags[i] = x[i] > 0.2f ? 1 : 0;
    run += flags[i];
    prefix[i] = run;
  }
  // The prefix itself comes from the scan kernel.
  Buffer bf(dev(), flags), bp(dev(), n * 4), bx(dev(), x);
  ops::ScanArgs s;
  s.dtype = DType::i32;
  s.in = bf.address();
  s.out = bp.address();
  s.n = n;
  ops::scan(dev(), s);
  EXPECT_EQ(bp.read<int32_t>(), prefix);

  Buffer coords(dev(), std::max(run, 1) * 2 * 8), sel(dev(), std::max(run, 1) * 4);
  ops::CompactArgs c;
  c.mode = ops::CompactMode::Coordinates;
  c.prefix = bp.address();
  c.dst = coords.address();
  c.n = n;
  c.limit = run;  // rows of the (2, run) result: coordinates go column by column
  c.sizes = {40, 25};
  ops::compact(dev(), c);
  c.mode = ops::CompactMode::Select;
  c.src = bx.address();
  c.dst = sel.address();
  c.elem_size = 4;
  ops::compact(dev(), c);
  std::vector<int64_t> want_c, cols;
  std::vector<float> want_s;
  for (int64_t i = 0; i < n; ++i)
    if (flags[i]) {
      want_c.push_back(i / 25);
      cols.push_back(i % 25);
      want_s.push_back(x[i]);
    }
  want_c.insert(want_c.end(), cols.begin(), cols.end());
  EXPECT_EQ(coords.read<int64_t>(want_c.size()), want_c);
  expect_close(sel.read<float>(want_s.size()), want_s, 0, 0);

  // Scatter back into zeros: selected positions get the compacted values again.
  std::vector<float> zeros(n, 0.0f), want_back(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) want_back[i] = flags[i] ? x[i] : 0.0f;
  Buffer bz(dev(), zeros);
  c.mode = ops::CompactMode::Scatter;
  c.src = sel.address();
  c.dst = bz.address();
  c.limit = run;
  ops::compact(dev(), c);
  expect_close(bz.read<float>(), want_back, 0, 0);
}

}  // namespace
}  // namespace vkml::test
