// Indexed gather / scatter, scans and compaction against C++ references.
#include <algorithm>
#include <cmath>
#include <limits>

#include "vkml/ops/compact.h"
#include "vkml/ops/index.h"
#include "vkml/ops/scan.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using IndexTest = VkmlTest;
using ScanTest = VkmlTest;
using CompactTest = VkmlTest;

std::vector<int64_t> random_indices(size_t n, uint32_t seed, int64_t lo, int64_t hi) {
  auto f = random_floats(n, seed, 0.0f, 1.0f);
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::min<int64_t>(hi - 1, lo + int64_t(f[i] * float(hi - lo)));
  return v;
}

TensorRef view(uint64_t address, DType dt, std::vector<int64_t> sizes,
               std::vector<int64_t> strides) {
  TensorRef t;
  t.address = address;
  t.dtype = dt;
  t.ndim = int(sizes.size());
  for (int d = 0; d < t.ndim; ++d) {
    t.sizes[d] = sizes[d];
    t.strides[d] = strides[d];
  }
  return t;
}

// index_select along dim 1 of a [4, 9, 5] float tensor: out[o, j, i] = x[o, idx[j], i].
TEST_F(IndexTest, GatherRows) {
  const int64_t O = 4, D = 9, I = 5, N = 12;
  auto x = random_floats(O * D * I, 3);
  auto idx = random_indices(N, 4, -D, D);  // negatives wrap
  Buffer bx(dev(), x), bi(dev(), idx), bo(dev(), O * N * I * 4);
  ops::IndexArgs a;
  a.mode = ops::IndexMode::Gather;
  a.dst = view(bo.address(), DType::f32, {O, N, I}, {N * I, I, 1});
  a.src = view(bx.address(), DType::f32, {O, N, I}, {D * I, 0, 1});
  a.idx = view(bi.address(), DType::i64, {O, N, I}, {0, 1, 0});
  a.dim_stride = I;
  a.dim_size = D;
  a.wrap_negative = true;
  ops::index_op(dev(), a);
  auto got = bo.read<float>();
  std::vector<double> want(got.size());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = 0; i < I; ++i) {
        int64_t k = idx[j] < 0 ? idx[j] + D : idx[j];
        want[(o * N + j) * I + i] = x[(o * D + k) * I + i];
      }
  expect_close(got, want, 0, 0);
}

TEST_F(IndexTest, GatherOutOfRangeReadsZero) {
  std::vector<float> x = {1, 2, 3};
  std::vector<int32_t> idx = {2, 3, -1, 0};
  Buffer bx(dev(), x), bi(dev(), idx), bo(dev(), 16);
  ops::IndexArgs a;
  a.dst = view(bo.address(), DType::f32, {4}, {1});
  a.src = view(bx.address(), DType::f32, {4}, {0});
  a.idx = view(bi.address(), DType::i32, {4}, {1});
  a.dim_stride = 1;
  a.dim_size = 3;
  ops::index_op(dev(), a);
  expect_close(bo.read<float>(), std::vector<float>{3, 0, 0, 1}, 0, 0);
}

// scatter-add with many duplicates, for every dtype with an atomic or serial path.
template <class T>
void scatter_sum(Device& dev, DType dt, ops::IndexReduce red, bool serial = false) {
  const int64_t N = 3000, M = 7;
  auto f = random_floats(N, 5, -4.0f, 4.0f);
  std::vector<T> src(N);
  for (int64_t i = 0; i < N; ++i) src[i] = T(std::round(f[i]));
  if (red == ops::IndexReduce::Mul)
    for (auto& v : src) v = (v >= T(0)) ? T(1) : T(-1);
  auto idx = random_indices(N, 6, 0, M);
  std::vector<T> dst(M, T(red == ops::IndexReduce::Mul ? 1 : 2));
  std::vector<T> want = dst;
  for (int64_t i = 0; i < N; ++i) {
    T& w = want[idx[i]];
    switch (red) {
      case ops::IndexReduce::Add:
        w = T(w + src[i]);
        break;
      case ops::IndexReduce::Mul:
        w = T(w * src[i]);
        break;
      case ops::IndexReduce::Max:
        w = std::max(w, src[i]);
        break;
      case ops::IndexReduce::Min:
        w = std::min(w, src[i]);
        break;
      default:
        break;
    }
  }
  Buffer bs(dev, src), bi(dev, idx), bd(dev, dst);
  ops::IndexArgs a;
  a.mode = ops::IndexMode::Scatter;
  a.reduce = red;
  a.dtype = dt;
  a.dst = view(bd.address(), dt, {N}, {0});
  a.src = view(bs.address(), dt, {N}, {1});
  a.idx = view(bi.address(), DType::i64, {N}, {1});
  a.dim_stride = 1;
  a.dim_size = M;
  a.serial = serial;
  ops::index_op(dev, a);
  auto got = bd.read<T>();
  for (int64_t j = 0; j < M; ++j) EXPECT_EQ(double(got[j]), double(want[j])) << dtype_name(dt) << j;
}

TEST_F(IndexTest, ScatterReductions) {
  using R = ops::IndexReduce;
  for (R r : {R::Add, R::Mul, R::Max, R::Min}) {
    scatter_sum<float>(dev(), DType::f32, r);
    scatter_sum<int32_t>(dev(), DType::i32, r);
    scatter_sum<int64_t>(dev(), DType::i64, r);
  }
  scatter_sum<float>(dev(), DType::f32, R::Add, /*serial=*/true);
}

TEST_F(IndexTest, Int64SumCarriesIntoHighWord) {
  std::vector<int64_t> src(64, int64_t(0xffffffffLL)), idx(64, 0), dst = {5};
  Buffer bs(dev(), src), bi(dev(), idx), bd(dev(), dst);
  ops::IndexArgs a;
  a.mode = ops::IndexMode::Scatter;
  a.reduce = ops::IndexReduce::Add;
  a.dtype = DType::i64;
  a.dst = view(bd.address(), DType::i64, {64}, {0});
  a.src = view(bs.address(), DType::i64, {64}, {1});
  a.idx = view(bi.address(), DType::i64, {64}, {1});
  a.dim_stride = 1;
  a.dim_size = 1;
  ops::index_op(dev(), a);
  EXPECT_EQ(bd.read<int64_t>()[0], 5 + 64 * int64_t(0xffffffffLL));
}

TEST_F(IndexTest, ScatterValueSkipsPaddingAndOutOfRange) {
  std::vector<int64_t> idx = {0, 2, 5, 2, -1};
  std::vector<float> dst(4, 0.0f);
  Buffer bi(dev(), idx), bd(dev(), dst);
  ops::IndexArgs a;
  a.mode = ops::IndexMode::Scatter;
  a.reduce = ops::IndexReduce::Add;
  a.dst = view(bd.address(), DType::f32, {5}, {0});
  a.idx = view(bi.address(), DType::i64, {5}, {1});
  a.value = Scalar::of(1.5);
  a.dim_stride = 1;
  a.dim_size = 4;
  a.skip = true;
  a.skip_value = 0;
  ops::index_op(dev(), a);
  expect_close(bd.read<float>(), std::vector<float>{0, 0, 3, 0}, 0, 0);
}

// A 6-dim iteration that cannot coalesce below four dims: the host loops.
TEST_F(IndexTest, ManyDims) {
  std::vector<int64_t> sizes = {2, 3, 2, 3, 2, 3};
  int64_t n = 216;
  auto x = random_floats(n, 9);
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = (i * 7) % n;
  Buffer bx(dev(), x), bi(dev(), idx), bo(dev(), n * 4);
  // dst transposed (reversed dim order), src contiguous, index contiguous
  std::vector<int64_t> cs = {108, 36, 18, 6, 3, 1}, ts(6);
  int64_t s = 1;
  for (int d = 0; d < 6; ++d) {
    ts[d] = s;
    s *= sizes[d];
  }
  ops::IndexArgs a;
  a.dst = view(bo.address(), DType::f32, sizes, ts);
  a.src = view(bx.address(), DType::f32, sizes, {0, 0, 0, 0, 0, 0});
  a.idx = view(bi.address(), DType::i64, sizes, cs);
  a.dim_stride = 1;
  a.dim_size = n;
  ops::index_op(dev(), a);
  auto got = bo.read<float>();
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = i, off = 0;
    for (int d = 5; d >= 0; --d) {
      off += (r % sizes[d]) * ts[d];
      r /= sizes[d];
    }
    want[off] = x[idx[i]];
  }
  expect_close(got, want, 0, 0);
}

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
  c.sizes = {40, 25};
  ops::compact(dev(), c);
  c.mode = ops::CompactMode::Select;
  c.src = bx.address();
  c.dst = sel.address();
  c.elem_size = 4;
  ops::compact(dev(), c);
  std::vector<int64_t> want_c;
  std::vector<float> want_s;
  for (int64_t i = 0; i < n; ++i)
    if (flags[i]) {
      want_c.push_back(i / 25);
      want_c.push_back(i % 25);
      want_s.push_back(x[i]);
    }
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
