// Reductions over the middle dim of [outer, r, inner] against a C++ reference,
// in each dtype and each kernel strategy (workgroup per row, thread per
// output, split over r in several passes).
#include <cmath>
#include <limits>

#include "vkml/ops/reduce.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::ReduceOp;
using ReduceTest = VkmlTest;

struct Shape {
  int64_t outer, r, inner;
};

const char* op_name(ReduceOp op) {
  const char* names[] = {"sum", "prod", "max", "min", "argmax", "argmin", "all", "any"};
  return names[int(op)];
}

bool tracks_index(ReduceOp op) {
  return op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax ||
         op == ReduceOp::ArgMin;
}

// The reference in accumulator type A (double for floats, int64 for integers).
template <class A>
void reference(ReduceOp op, const std::vector<A>& x, Shape s, double scale, std::vector<A>& val,
               std::vector<int64_t>& idx) {
  val.assign(s.outer * s.inner, A(0));
  idx.assign(s.outer * s.inner, 0);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      A acc = 0;
      int64_t best = 0;
      if (op == ReduceOp::Prod || op == ReduceOp::All) acc = 1;
      for (int64_t j = 0; j < s.r; ++j) {
        A v = x[(o * s.r + j) * s.inner + i];
        switch (op) {
          case ReduceOp::Sum:
            acc += v;
            break;
          case ReduceOp::Prod:
            acc *= v;
            break;
          case ReduceOp::All:
            acc = acc && v != A(0);
            break;
          case ReduceOp::Any:
            acc = acc || v != A(0);
            break;
          default: {
            bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
            bool take = j == 0;
            if (!take && !(acc != acc)) take = v != v || (is_max ? v > acc : v < acc);
            if (take) acc = v, best = j;
          }
        }
      }
      if (scale != 1.0) acc = A(double(acc) * scale);
      val[o * s.inner + i] = acc;
      idx[o * s.inner + i] = best;
    }
}

// Runs op over `host` (stored as dtype dt) and compares with the reference on
// `values` (the same numbers in the accumulator type).
template <class T, class A>
void check(Device& dev, ReduceOp op, DType dt, const std::vector<T>& host,
           const std::vector<A>& values, Shape s, double rtol, double atol, double scale = 1.0) {
  SCOPED_TRACE(std::string(op_name(op)) + " " + dtype_name(dt) + " [" + std::to_string(s.outer) +
               ", " + std::to_string(s.r) + ", " + std::to_string(s.inner) + "]");
  int64_t n = s.outer * s.inner;
  Buffer in(dev, host);
  Buffer out(dev, std::max<int64_t>(n, 1) * sizeof(T));
  Buffer idx(dev, std::max<int64_t>(n, 1) * 8);
  bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  ops::ReduceArgs a;
  a.op = op;
  a.dtype = dt;
  a.in = in.address();
  a.outer = s.outer;
  a.r = s.r;
  a.inner = s.inner;
  a.out = arg ? 0 : out.address();
  a.indices = tracks_index(op) ? idx.address() : 0;
  a.scale = scale;
  ops::reduce(dev, a);
  std::vector<A> want;
  std::vector<int64_t> want_idx;
  reference(op, values, s, scale, want, want_idx);
  if (!arg) {
    std::vector<T> got_raw = out.read<T>(n);
    std::vector<A> got(n);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, uint16_t>)
        got[i] = A(f16_to_f32(got_raw[i]));
      else
        got[i] = A(got_raw[i]);
    }
    if constexpr (std::is_same_v<T, uint16_t>)
      for (auto& w : want) w = A(f16_to_f32(f32_to_f16(float(w))));
    if constexpr (std::is_floating_point_v<A>)
      expect_close(got, want, rtol, atol, "values");
    else
      EXPECT_EQ(got, want);
  }
  if (tracks_index(op)) EXPECT_EQ(idx.read<int64_t>(n), want_idx);
}

void check_f32(Device& dev, ReduceOp op, const std::vector<float>& x, Shape s, double scale = 1.0) {
  std::vector<double> d(x.begin(), x.end());
  double atol = op == ReduceOp::Sum ? 2e-6 * double(s.r) : 0;
  double rtol = op == ReduceOp::Sum || op == ReduceOp::Prod ? 1e-4 : 0;
  check(dev, op, DType::f32, x, d, s, rtol, atol, scale);
}

const Shape kShapes[] = {
    {3, 1000, 1},    // a workgroup per row
    {5, 10, 1},      // short rows: a thread per row
    {4, 37, 6},      // a thread per (outer, inner)
    {1, 100000, 1},  // one long row, split in two passes
    {2, 3000, 3},    // few columns, split in two passes
    {1, 200000, 2},  // split in three passes
    {1, 300000, 1},  // split, and the partials reduced by a workgroup
    {300, 70, 1},    // many short workgroup rows
};

TEST_F(ReduceTest, Float32AllOps) {
  for (Shape s : kShapes) {
    int64_t n = s.outer * s.r * s.inner;
    auto x = random_floats(n, uint32_t(n));
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax,
                        ReduceOp::ArgMin, ReduceOp::All, ReduceOp::Any})
      check_f32(dev(), op, x, s);
    // mean
    check_f32(dev(), ReduceOp::Sum, x, s, 1.0 / double(s.r));
    // prod of values near 1, with some exact zeros for all/any
    auto p = random_floats(n, uint32_t(n) + 1, 0.99f, 1.01f);
    for (int64_t i = 0; i < n; i += 997) p[i] = 0.0f;
    check_f32(dev(), ReduceOp::Prod, p, s);
    check_f32(dev(), ReduceOp::All, p, s);
  }
}

TEST_F(ReduceTest, NaNWinsMaxMin) {
  for (Shape s : kShapes) {
    int64_t n = s.outer * s.r * s.inner;
    auto x = random_floats(n, 11);
    // NaNs at a few places; ties (duplicate maxima) elsewhere.
    for (int64_t i = n / 3; i < n; i += n / 3 + 1) x[i] = NAN;
    x[n - 1] = NAN;
    check_f32(dev(), ReduceOp::ArgMax, x, s);
    // Many NaNs per slice: the first one's index must win every merge.
    for (int64_t i = 50; i < n; i += 97) x[i] = NAN;
    for (int64_t i = 0; i < n; i += 13) x[i] = 1.0f;
    for (int64_t i = 5; i < n; i += 17) x[i] = -1.0f;
    for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin})
      check_f32(dev(), op, x, s);
  }
}

TEST_F(ReduceTest, InfinitiesInMaxMin) {
  Shape s{2, 500, 1};
  std::vector<float> x(1000, -INFINITY);
  x[700] = INFINITY;
  x[900] = INFINITY;
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin})
    check_f32(dev(), op, x, s);
}

TEST_F(ReduceTest, Float16) {
  for (Shape s : {Shape{3, 1000, 1}, Shape{4, 37, 6}, Shape{1, 100000, 1}}) {
    int64_t n = s.outer * s.r * s.inner;
    auto x = random_floats(n, 21);
    auto h = to_f16(x);
    auto back = from_f16(h);
    std::vector<double> d(back.begin(), back.end());
    check(dev(), ReduceOp::Sum, DType::f16, h, d, s, 2e-3, 2e-5 * double(s.r));
    check(dev(), ReduceOp::Sum, DType::f16, h, d, s, 2e-3, 2e-3, 1.0 / double(s.r));
    for (ReduceOp op :
         {ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin, ReduceOp::Any})
      check(dev(), op, DType::f16, h, d, s, 0, 0);
  }
}

TEST_F(ReduceTest, Int32) {
  for (Shape s : kShapes) {
    int64_t n = s.outer * s.r * s.inner;
    std::vector<int32_t> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = int32_t((i * 7919) % 201) - 100;  // many ties
    std::vector<int64_t> d(x.begin(), x.end());
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax,
                        ReduceOp::ArgMin, ReduceOp::All, ReduceOp::Any})
      check(dev(), op, DType::i32, x, d, s, 0, 0);
  }
  Shape s{3, 20, 2};
  std::vector<int32_t> p(120);
  for (int i = 0; i < 120; ++i) p[i] = (i % 3) - 1 + (i % 5 == 0 ? 3 : 0);
  check(dev(), ReduceOp::Prod, DType::i32, p, std::vector<int64_t>(p.begin(), p.end()), s, 0, 0);
}

TEST_F(ReduceTest, Int64KeepsAllBits) {
  for (Shape s : {Shape{3, 1000, 1}, Shape{4, 37, 6}, Shape{1, 200000, 2}}) {
    int64_t n = s.outer * s.r * s.inner;
    std::vector<int64_t> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = (int64_t(1) << 40) * ((i * 31) % 7 - 3) + i;
    for (ReduceOp op :
         {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin})
      check(dev(), op, DType::i64, x, x, s, 0, 0);
  }
}

TEST_F(ReduceTest, Bool) {
  for (Shape s : {Shape{3, 1000, 1}, Shape{5, 10, 1}, Shape{4, 37, 6}, Shape{1, 100000, 1}}) {
    int64_t n = s.outer * s.r * s.inner;
    for (int density : {0, 1, 2}) {
      std::vector<uint8_t> x(n);
      for (int64_t i = 0; i < n; ++i)
        x[i] = density == 0 ? 0 : density == 2 ? 1 : uint8_t(i % 1001 == 0);
      std::vector<int64_t> d(x.begin(), x.end());
      for (ReduceOp op : {ReduceOp::All, ReduceOp::Any, ReduceOp::Max, ReduceOp::ArgMax})
        check(dev(), op, DType::u8, x, d, s, 0, 0);
    }
  }
}

TEST_F(ReduceTest, EmptyReductionDim) {
  const int64_t n = 6;
  Buffer out(dev(), n * 4);
  ops::ReduceArgs a;
  a.dtype = DType::f32;
  a.in = out.address();  // never read
  a.outer = 2;
  a.r = 0;
  a.inner = 3;
  a.out = out.address();
  std::pair<ReduceOp, float> cases[] = {
      {ReduceOp::Sum, 0.0f}, {ReduceOp::Prod, 1.0f}, {ReduceOp::All, 1.0f}, {ReduceOp::Any, 0.0f}};
  for (auto [op, want] : cases) {
    a.op = op;
    ops::reduce(dev(), a);
    EXPECT_EQ(out.read<float>(), std::vector<float>(n, want)) << op_name(op);
  }
  // mean of nothing is NaN
  a.op = ReduceOp::Sum;
  a.scale = std::numeric_limits<double>::infinity();
  ops::reduce(dev(), a);
  for (float v : out.read<float>()) EXPECT_TRUE(std::isnan(v));
  a.scale = 1.0;
  Buffer idx(dev(), n * 8);
  a.indices = idx.address();
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::ArgMin}) {
    a.op = op;
    try {
      ops::reduce(dev(), a);
      ADD_FAILURE() << op_name(op) << " of an empty dim did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    }
  }
}

TEST_F(ReduceTest, EmptyOutputIsANoOp) {
  Buffer out(dev(), 16);
  out.write(std::vector<float>{7, 7, 7, 7});
  ops::ReduceArgs a;
  a.op = ReduceOp::Max;
  a.in = out.address();
  a.outer = 0;
  a.r = 5;
  a.inner = 4;
  a.out = out.address();
  ops::reduce(dev(), a);
  a.outer = 3;
  a.inner = 0;
  a.r = 0;
  ops::reduce(dev(), a);
  EXPECT_EQ(out.read<float>(), std::vector<float>(4, 7.0f));
}

TEST_F(ReduceTest, MoreRowsThanOneGridDimension) {
  Shape s{70000, 64, 1};  // 70000 workgroups: spills into grid y
  int64_t n = s.outer * s.r;
  std::vector<int32_t> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = int32_t(i % 1000);
  std::vector<int64_t> d(x.begin(), x.end());
  check(dev(), ReduceOp::Sum, DType::i32, x, d, s, 0, 0);
}

}  // namespace
}  // namespace vkml::test
