// Row sort (bitonic, stable) and unique against C++ references.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "vkml/ops/sort.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using SortTest = VkmlTest;

// NaN is the largest value; ties keep input order.
template <class T>
void ref_sort(const std::vector<T>& x, int64_t rows, int64_t n, bool desc, std::vector<T>& keys,
              std::vector<int64_t>& idx) {
  keys.resize(x.size());
  idx.resize(x.size());
  auto lt = [](T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return !std::isnan(a) && (std::isnan(b) || a < b);
    return a < b;
  };
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> p(n);
    std::iota(p.begin(), p.end(), 0);
    const T* row = x.data() + r * n;
    std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
      return desc ? lt(row[b], row[a]) : lt(row[a], row[b]);
    });
    for (int64_t j = 0; j < n; ++j) {
      keys[r * n + j] = row[p[j]];
      idx[r * n + j] = p[j];
    }
  }
}

TEST_F(SortTest, Float32StableAnyLength) {
  for (int64_t n : {1, 2, 3, 100, 1024, 1025, 2048, 5000}) {
    for (bool desc : {false, true}) {
      int64_t rows = 3;
      auto x = random_floats(size_t(rows * n), uint32_t(n), -8.0f, 8.0f);
      for (auto& v : x) v = std::floor(v);  // ties
      if (n > 4) x[1] = x[n + 2] = NAN;
      std::vector<float> wk;
      std::vector<int64_t> wi;
      ref_sort(x, rows, n, desc, wk, wi);
      Buffer bx(dev(), x), bk(dev(), x.size() * 4), bi(dev(), x.size() * 8);
      ops::sort_rows(dev(), DType::f32, bx.address(), bk.address(), bi.address(), rows, n, desc);
      SCOPED_TRACE("n=" + std::to_string(n) + (desc ? " desc" : " asc"));
      expect_close(bk.read<float>(), wk, 0, 0);
      EXPECT_EQ(bi.read<int64_t>(), wi);
    }
  }
}

TEST_F(SortTest, ManyShortRowsShareBlocks) {
  for (int64_t n : {1, 2, 3, 5, 17, 64, 65}) {
    int64_t rows = 301;  // the last block holds a partial set of rows
    auto x = random_floats(size_t(rows * n), uint32_t(n) + 7, -4.0f, 4.0f);
    for (auto& v : x) v = std::floor(v);
    for (bool desc : {false, true}) {
      std::vector<float> wk;
      std::vector<int64_t> wi;
      ref_sort(x, rows, n, desc, wk, wi);
      Buffer bx(dev(), x), bk(dev(), x.size() * 4), bi(dev(), x.size() * 8);
      ops::sort_rows(dev(), DType::f32, bx.address(), bk.address(), bi.address(), rows, n, desc);
      SCOPED_TRACE("n=" + std::to_string(n));
      expect_close(bk.read<float>(), wk, 0, 0);
      EXPECT_EQ(bi.read<int64_t>(), wi);
    }
  }
}

TEST_F(SortTest, Int64Keys) {
  int64_t rows = 4, n = 1500;
  std::vector<int64_t> x(size_t(rows * n));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = int64_t((i * 7919) % 97) - 48 + (int64_t(i % 3) << 40);
  for (bool desc : {false, true}) {
    std::vector<int64_t> wk, wi;
    ref_sort(x, rows, n, desc, wk, wi);
    Buffer bx(dev(), x), bk(dev(), x.size() * 8), bi(dev(), x.size() * 8);
    ops::sort_rows(dev(), DType::i64, bx.address(), bk.address(), bi.address(), rows, n, desc);
    EXPECT_EQ(bk.read<int64_t>(), wk);
    EXPECT_EQ(bi.read<int64_t>(), wi);
  }
}

TEST_F(SortTest, UniqueGroupsAcrossScanChunks) {
  int64_t n = 2000;
  std::vector<int64_t> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = (i * 37) % 301;
  Buffer bx(dev(), x), bk(dev(), n * 8), bp(dev(), n * 8), ids(dev(), n * 4);
  ops::sort_rows(dev(), DType::i64, bx.address(), bk.address(), bp.address(), 1, n, false);
  ops::unique_groups(dev(), DType::i64, bk.address(), ids.address(), n);
  int64_t count = ids.read<uint32_t>()[size_t(n - 1)];
  ASSERT_EQ(count, 301);
  Buffer uniq(dev(), count * 8), start(dev(), count * 8), inv(dev(), n * 8), cnt(dev(), count * 8);
  ops::unique_write(dev(), DType::i64, bk.address(), bp.address(), ids.address(), n, count,
                    uniq.address(), start.address(), inv.address(), cnt.address());
  auto u = uniq.read<int64_t>();
  auto c = cnt.read<int64_t>();
  auto iv = inv.read<int64_t>();
  for (int64_t g = 0; g < count; ++g) {
    EXPECT_EQ(u[g], g);
    EXPECT_EQ(c[g], int64_t(std::count(x.begin(), x.end(), g)));
  }
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(iv[i], x[i]);
}

}  // namespace
}  // namespace vkml::test
