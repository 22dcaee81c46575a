#include "vkml/ops/elementwise_range.h"

#include <algorithm>
#include <initializer_list>
#include <limits>

#include "vkml/shaders/op_codes.h"

namespace vkml::ops {

namespace {

// Saturating int64 arithmetic: a bound that leaves int64 sticks at its end,
// which elementwise_range() then treats as unknown, like any other range that
// reaches the dtype's ends. Saturation keeps the order of values, so the
// corners of a product still bound it.
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t add(int64_t a, int64_t b) {
  if (b > 0 && a > kMax - b) return kMax;
  if (b < 0 && a < kMin - b) return kMin;
  return a + b;
}
int64_t neg(int64_t a) { return a == kMin ? kMax : -a; }
int64_t mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  const bool positive = (a > 0) == (b > 0);
  const bool fits =
      a > 0 ? (b > 0 ? a <= kMax / b : b >= kMin / a) : (b > 0 ? a >= kMin / b : a >= kMax / b);
  return fits ? a * b : positive ? kMax : kMin;
}
// Floor division (b != 0); kMin / -1 saturates.
int64_t floor_div(int64_t a, int64_t b) {
  if (a == kMin && b == -1) return kMax;
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

IntRange corners(std::initializer_list<int64_t> v) { return {std::min(v), std::max(v)}; }
IntRange mul(IntRange a, IntRange b) {
  return corners({mul(a.lo, b.lo), mul(a.lo, b.hi), mul(a.hi, b.lo), mul(a.hi, b.hi)});
}
bool excludes_zero(IntRange b) { return b.lo > 0 || b.hi < 0; }
int64_t magnitude(int64_t v) { return v < 0 ? neg(v) : v; }

std::optional<IntRange> range_of(const RangeArgs& a, IntRange x, IntRange y, IntRange z) {
  switch (a.op) {
    case OP_ADD:
    case OP_SUB: {  // x + alpha * y, x - alpha * y
      IntRange t = mul(y, IntRange{a.alpha, a.alpha});
      if (a.op == OP_SUB) t = {neg(t.hi), neg(t.lo)};
      return IntRange{add(x.lo, t.lo), add(x.hi, t.hi)};
    }
    case OP_MUL:
      return mul(x, y);
    case OP_NEG:
      return IntRange{neg(x.hi), neg(x.lo)};
    case OP_ABS:
      if (x.lo >= 0) return x;
      if (x.hi <= 0) return IntRange{neg(x.hi), neg(x.lo)};
      return IntRange{0, std::max(neg(x.lo), x.hi)};
    case OP_MAXIMUM:
      return IntRange{std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
    case OP_MINIMUM:
      return IntRange{std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
    case OP_REMAINDER:  // takes the divisor's sign (Python's %)
      if (y.lo > 0) return x.lo >= 0 && x.hi < y.lo ? x : IntRange{0, y.hi - 1};
      if (y.hi < 0) return x.hi <= 0 && x.lo > y.hi ? x : IntRange{y.lo + 1, 0};
      return std::nullopt;
    case OP_FMOD: {  // takes the dividend's sign, and is never larger than it
      if (!excludes_zero(y)) return std::nullopt;
      const int64_t m = std::max(magnitude(y.lo), magnitude(y.hi)) - 1;
      return IntRange{std::max(std::min<int64_t>(x.lo, 0), neg(m)),
                      std::min(std::max<int64_t>(x.hi, 0), m)};
    }
    case OP_DIV_FLOOR:
      if (!excludes_zero(y)) return std::nullopt;
      return corners({floor_div(x.lo, y.lo), floor_div(x.lo, y.hi), floor_div(x.hi, y.lo),
                      floor_div(x.hi, y.hi)});
    case OP_BITWISE_AND:  // a non-negative operand bounds the result by itself
      if (x.lo >= 0 && y.lo >= 0) return IntRange{0, std::min(x.hi, y.hi)};
      if (x.lo >= 0) return IntRange{0, x.hi};
      if (y.lo >= 0) return IntRange{0, y.hi};
      return std::nullopt;
    case OP_WHERE:  // inputs: condition, x, y
      return join(y, z);
    case OP_CLAMP:  // min(max(x, min), max), in PyTorch's order
      if (a.min) x = {std::max(x.lo, *a.min), std::max(x.hi, *a.min)};
      if (a.max) x = {std::min(x.lo, *a.max), std::min(x.hi, *a.max)};
      return x;
    case OP_CLAMP_TENSOR:  // inputs: x, min, max
      x = {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
      return IntRange{std::min(x.lo, z.lo), std::min(x.hi, z.hi)};
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<IntRange> elementwise_range(const RangeArgs& a) {
  if (a.bits != 32 && a.bits != 64) return std::nullopt;
  const int64_t dmin = a.bits == 32 ? std::numeric_limits<int32_t>::min() : kMin;
  const int64_t dmax = a.bits == 32 ? std::numeric_limits<int32_t>::max() : kMax;
  // An unknown input may hold anything its dtype holds.
  IntRange in[3];
  for (int k = 0; k < 3; ++k) in[k] = a.in[k].value_or(IntRange{dmin, dmax});
  std::optional<IntRange> r = range_of(a, in[0], in[1], in[2]);
  // A range that reaches the dtype's ends came from an unknown input, or may have
  // wrapped in the kernel.
  if (!r || r->lo > r->hi || r->lo <= dmin || r->hi >= dmax) return std::nullopt;
  return r;
}

}  // namespace vkml::ops
