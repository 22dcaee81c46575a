// Indexed gather / scatter against C++ references.
#include <algorithm>
#include <cmath>
#include <limits>

#include "vkml/ops/index.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using IndexTest = VkmlTest;

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

}  // namespace
}  // namespace vkml::test
