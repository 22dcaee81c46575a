// searchsorted and the counting kernels (histc, bincount) against C++ references.
#include <cmath>

#include "vkml/ops/search.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using SearchTest = VkmlTest;

TEST_F(SearchTest, SearchSortedLeftRightAndSorter) {
  std::vector<float> b = {-1, 0, 0, 2, 5};
  std::vector<float> v = {-2, -1, 0, 1, 2, 5, 6, NAN};
  Buffer bb(dev(), b), bv(dev(), v), out(dev(), v.size() * 8), out32(dev(), v.size() * 4);
  ops::searchsorted(dev(), DType::f32, bb.address(), bv.address(), 0, out.address(), 5,
                    int64_t(v.size()), int64_t(v.size()), false, false);
  EXPECT_EQ(out.read<int64_t>(), (std::vector<int64_t>{0, 0, 1, 3, 3, 4, 5, 5}));
  ops::searchsorted(dev(), DType::f32, bb.address(), bv.address(), 0, out32.address(), 5,
                    int64_t(v.size()), int64_t(v.size()), true, true);
  EXPECT_EQ(out32.read<int32_t>(), (std::vector<int32_t>{0, 1, 3, 3, 4, 5, 5, 5}));
  // Unsorted boundaries with a sorter.
  std::vector<float> ub = {5, -1, 2, 0, 0};
  std::vector<int64_t> sorter = {1, 3, 4, 2, 0};
  Buffer bub(dev(), ub), bs(dev(), sorter);
  ops::searchsorted(dev(), DType::f32, bub.address(), bv.address(), bs.address(), out.address(), 5,
                    int64_t(v.size()), int64_t(v.size()), false, false);
  EXPECT_EQ(out.read<int64_t>(), (std::vector<int64_t>{0, 0, 1, 3, 3, 4, 5, 5}));
}

TEST_F(SearchTest, HistcAndBincount) {
  std::vector<float> x = {0.0f, 0.5f, 1.0f, 2.99f, 3.0f, 3.5f, -0.1f, NAN};
  Buffer bx(dev(), x), bins(dev(), std::vector<int32_t>(3, 0));
  ops::histc(dev(), bx.address(), int64_t(x.size()), bins.address(), 3, 0.0f, 3.0f);
  EXPECT_EQ(bins.read<int32_t>(), (std::vector<int32_t>{2, 1, 2}));
  std::vector<int64_t> v = {0, 3, 3, 1, 3};
  std::vector<float> w = {0.5f, 1.0f, 2.0f, 4.0f, 8.0f};
  Buffer bv(dev(), v), bw(dev(), w), counts(dev(), std::vector<int32_t>(5, 0)),
      sums(dev(), std::vector<float>(4, 0.0f));
  ops::bincount(dev(), bv.address(), 0, 5, counts.address(), 5);
  EXPECT_EQ(counts.read<int32_t>(), (std::vector<int32_t>{1, 1, 0, 3, 0}));
  ops::bincount(dev(), bv.address(), bw.address(), 5, sums.address(), 4);
  expect_close(sums.read<float>(), std::vector<float>{0.5f, 4.0f, 0.0f, 11.0f}, 0, 0);
}

}  // namespace
}  // namespace vkml::test
