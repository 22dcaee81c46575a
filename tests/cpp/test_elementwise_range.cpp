// The result ranges of integer elementwise ops: a range claimed for a result
// must hold every value the kernel can produce, or an index check would trust
// a wrong one; each case below is checked against every input combination.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>

#include "vkml/ops/elementwise_range.h"
#include "vkml/shaders/op_codes.h"

namespace vkml::test {
namespace {

using ops::elementwise_range;
using ops::RangeArgs;

RangeArgs args(int op, std::optional<IntRange> x, std::optional<IntRange> y = std::nullopt,
               std::optional<IntRange> z = std::nullopt) {
  RangeArgs a;
  a.op = op;
  a.in[0] = x;
  a.in[1] = y;
  a.in[2] = z;
  return a;
}

// The range must be exactly the set of results over every input in the given
// (small) ranges: holding them all, and reached at both ends.
void expect_exact(const RangeArgs& a, const std::function<int64_t(int64_t, int64_t)>& f) {
  std::optional<IntRange> r = elementwise_range(a);
  ASSERT_TRUE(r) << "op " << a.op;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  const IntRange x = *a.in[0], y = a.in[1].value_or(IntRange{0, 0});
  for (int64_t i = x.lo; i <= x.hi; ++i)
    for (int64_t j = y.lo; j <= y.hi; ++j) {
      const int64_t v = f(i, j);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  EXPECT_EQ(r->lo, lo) << "op " << a.op;
  EXPECT_EQ(r->hi, hi) << "op " << a.op;
}

int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
}

TEST(ElementwiseRange, ArithmeticIsExactOverSmallRanges) {
  const IntRange ranges[] = {{-7, -3}, {-4, 5}, {0, 0}, {2, 9}};
  for (IntRange x : ranges)
    for (IntRange y : ranges) {
      RangeArgs add = args(OP_ADD, x, y);
      add.alpha = -3;
      expect_exact(add, [](int64_t a, int64_t b) { return a - 3 * b; });
      RangeArgs sub = args(OP_SUB, x, y);
      sub.alpha = 2;
      expect_exact(sub, [](int64_t a, int64_t b) { return a - 2 * b; });
      expect_exact(args(OP_MUL, x, y), [](int64_t a, int64_t b) { return a * b; });
      expect_exact(args(OP_MAXIMUM, x, y), [](int64_t a, int64_t b) { return std::max(a, b); });
      expect_exact(args(OP_MINIMUM, x, y), [](int64_t a, int64_t b) { return std::min(a, b); });
      expect_exact(args(OP_NEG, x), [](int64_t a, int64_t) { return -a; });
      expect_exact(args(OP_ABS, x), [](int64_t a, int64_t) { return a < 0 ? -a : a; });
      if (y.lo > 0 || y.hi < 0)
        expect_exact(args(OP_DIV_FLOOR, x, y),
                     [](int64_t a, int64_t b) { return floor_div(a, b); });
    }
}

// Remainders, fmod and bitwise and give bounds, not always the exact range:
// every result must lie within them.
void expect_holds(const RangeArgs& a, const std::function<int64_t(int64_t, int64_t)>& f) {
  std::optional<IntRange> r = elementwise_range(a);
  ASSERT_TRUE(r) << "op " << a.op;
  const IntRange x = *a.in[0], y = *a.in[1];
  for (int64_t i = x.lo; i <= x.hi; ++i)
    for (int64_t j = y.lo; j <= y.hi; ++j) {
      const int64_t v = f(i, j);
      EXPECT_TRUE(v >= r->lo && v <= r->hi) << "op " << a.op << ": " << i << ", " << j;
    }
}

TEST(ElementwiseRange, RemaindersAndMasksAreBounded) {
  const IntRange ranges[] = {{-20, -3}, {-4, 5}, {0, 3}, {2, 9}, {-9, -1}};
  for (IntRange x : ranges)
    for (IntRange y : ranges) {
      if (y.lo > 0 || y.hi < 0) {
        expect_holds(args(OP_REMAINDER, x, y), py_mod);
        expect_holds(args(OP_FMOD, x, y), [](int64_t a, int64_t b) { return a % b; });
      }
      if (x.lo >= 0 || y.lo >= 0)
        expect_holds(args(OP_BITWISE_AND, x, y), [](int64_t a, int64_t b) { return a & b; });
    }
  // By a positive divisor, whatever the dividend: [0, divisor - 1].
  std::optional<IntRange> r = elementwise_range(args(OP_REMAINDER, std::nullopt, IntRange{7, 7}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 0);
  EXPECT_EQ(r->hi, 6);
  r = elementwise_range(args(OP_BITWISE_AND, std::nullopt, IntRange{15, 15}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hi, 15);
  EXPECT_FALSE(elementwise_range(args(OP_REMAINDER, IntRange{0, 9}, IntRange{-1, 1})));
  EXPECT_FALSE(elementwise_range(args(OP_DIV_FLOOR, IntRange{0, 9}, IntRange{0, 3})));
}

TEST(ElementwiseRange, ClampAndWhereBoundUnknownInputs) {
  RangeArgs c = args(OP_CLAMP, std::nullopt);
  c.min = 0;
  c.max = 9;
  std::optional<IntRange> r = elementwise_range(c);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 0);
  EXPECT_EQ(r->hi, 9);
  c.min = 12;  // min above max: everything becomes max, as in PyTorch
  r = elementwise_range(c);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 9);
  EXPECT_EQ(r->hi, 9);
  RangeArgs lower = args(OP_CLAMP, IntRange{-5, 3});
  lower.min = 0;
  r = elementwise_range(lower);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 0);
  EXPECT_EQ(r->hi, 3);
  lower.in[0] = std::nullopt;  // one bound of an unknown input: unbounded above
  EXPECT_FALSE(elementwise_range(lower));
  r = elementwise_range(args(OP_CLAMP_TENSOR, std::nullopt, IntRange{1, 2}, IntRange{4, 8}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 1);
  EXPECT_EQ(r->hi, 8);
  r = elementwise_range(args(OP_WHERE, std::nullopt, IntRange{-1, 2}, IntRange{4, 8}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, -1);
  EXPECT_EQ(r->hi, 8);
  EXPECT_FALSE(elementwise_range(args(OP_WHERE, IntRange{0, 1}, std::nullopt, IntRange{4, 8})));
}

TEST(ElementwiseRange, UnknownInputsAndPossibleWrapsGiveNothing) {
  EXPECT_FALSE(elementwise_range(args(OP_ADD, std::nullopt, IntRange{1, 1})));
  EXPECT_FALSE(elementwise_range(args(OP_MUL, IntRange{0, 3}, std::nullopt)));
  EXPECT_FALSE(elementwise_range(args(OP_EXP, IntRange{0, 3})));  // not an integer op
  const int64_t big = int64_t(1) << 62;
  EXPECT_FALSE(elementwise_range(args(OP_MUL, IntRange{0, big}, IntRange{0, 4})));
  EXPECT_FALSE(elementwise_range(args(OP_ADD, IntRange{big, big}, IntRange{big, big})));
  EXPECT_FALSE(elementwise_range(args(OP_NEG, IntRange{std::numeric_limits<int64_t>::min(), 0})));
  // int32 kernels wrap at 32 bits.
  RangeArgs a = args(OP_MUL, IntRange{0, 70000}, IntRange{0, 70000});
  a.bits = 32;
  EXPECT_FALSE(elementwise_range(a));
  a.bits = 64;
  std::optional<IntRange> r = elementwise_range(a);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hi, int64_t(70000) * 70000);
}

}  // namespace
}  // namespace vkml::test
