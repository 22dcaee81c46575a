// Philox random numbers: known answers, reproducibility, and distribution checks.
#include <array>
#include <cmath>
#include <set>

#include "vkml/ops/random.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::Distribution;
using RandomTest = VkmlTest;

using U4 = std::array<uint32_t, 4>;

// Philox4x32-10 on the host, from the published algorithm.
U4 philox(U4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0];
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k1,
         uint32_t(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

U4 draw(uint64_t i, uint64_t seed, uint64_t offset) {
  return philox({uint32_t(i), uint32_t(offset), uint32_t(offset >> 32), 0}, uint32_t(seed),
                uint32_t(seed >> 32));
}

TEST(PhiloxReference, KnownAnswers) {  // Random123's kat_vectors
  EXPECT_EQ(philox({0, 0, 0, 0}, 0, 0), (U4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox({~0u, ~0u, ~0u, ~0u}, ~0u, ~0u),
            (U4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0),
            (U4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

template <class T>
std::vector<T> generate(Device& dev, DType dt, int64_t n, Distribution d, Scalar a, Scalar b,
                        uint64_t seed, uint64_t offset) {
  Buffer buf(dev, std::max<int64_t>(n, 1) * itemsize(dt));
  ops::random(dev, TensorRef::contiguous(buf.address(), dt, {n}), d, a, b, seed, offset);
  return buf.read<T>(n);
}

struct Moments {
  double mean = 0, std = 0, min = INFINITY, max = -INFINITY;
};

template <class V>
Moments moments(const V& v) {
  Moments m;
  for (auto x : v) {
    m.mean += double(x);
    m.min = std::min(m.min, double(x));
    m.max = std::max(m.max, double(x));
  }
  m.mean /= double(v.size());
  for (auto x : v) m.std += (double(x) - m.mean) * (double(x) - m.mean);
  m.std = std::sqrt(m.std / double(v.size()));
  return m;
}

TEST_F(RandomTest, MatchesHostPhilox) {
  const int64_t n = 4096;
  const uint64_t seed = 0x0123456789abcdefull, offset = 0xfedcba9876543210ull;
  // randint over [0, 2^32) exposes the first Philox output word unchanged.
  auto bits = generate<int64_t>(dev(), DType::i64, n, Distribution::RandInt, Scalar::of_int(0),
                                Scalar::of_int(int64_t(1) << 32), seed, offset);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(uint64_t(bits[i]), draw(i, seed, offset)[0]) << i;
  auto zero = generate<int64_t>(dev(), DType::i64, 1, Distribution::RandInt, Scalar::of_int(0),
                                Scalar::of_int(int64_t(1) << 32), 0, 0);
  EXPECT_EQ(uint64_t(zero[0]), 0x6627e8d5u);

  // Small ranges reduce one word, larger ones both.
  for (auto [lo, hi] :
       {std::pair<int64_t, int64_t>{5, 11}, {-3, 1000}, {-(1ll << 40), 1ll << 41}}) {
    auto v = generate<int64_t>(dev(), DType::i64, n, Distribution::RandInt, Scalar::of_int(lo),
                               Scalar::of_int(hi), seed, offset);
    uint64_t range = uint64_t(hi - lo);
    for (int64_t i = 0; i < n; ++i) {
      U4 x = draw(i, seed, offset);
      uint64_t r = range <= 256 ? x[0] % range : ((uint64_t(x[1]) << 32) | x[0]) % range;
      ASSERT_EQ(v[i], lo + int64_t(r)) << i << " in [" << lo << ", " << hi << ")";
    }
  }

  auto u = generate<float>(dev(), DType::f32, n, Distribution::Uniform, Scalar::of(-1.0),
                           Scalar::of(3.0), seed, offset);
  std::vector<double> want_u(n), want_z(n);
  for (int64_t i = 0; i < n; ++i) {
    U4 x = draw(i, seed, offset);
    want_u[i] = -1.0 + 4.0 * double(x[0] >> 8) / 16777216.0;
    double u1 = double((x[0] >> 8) + 1) / 16777216.0, u2 = double(x[1] >> 8) / 16777216.0;
    want_z[i] = 0.5 + 2.0 * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }
  expect_close(u, want_u, 1e-6, 1e-6, "uniform");
  auto z = generate<float>(dev(), DType::f32, n, Distribution::Normal, Scalar::of(0.5),
                           Scalar::of(2.0), seed, offset);
  expect_close(z, want_z, 1e-3, 1e-3, "normal");
}

TEST_F(RandomTest, Reproducible) {
  const int64_t n = 1000;
  auto gen = [&](uint64_t seed, uint64_t offset) {
    return generate<float>(dev(), DType::f32, n, Distribution::Uniform, Scalar::of(0.0),
                           Scalar::of(1.0), seed, offset);
  };
  auto a = gen(42, 0);
  EXPECT_EQ(a, gen(42, 0));
  auto b = gen(42, 1), c = gen(43, 0), d = gen(42, uint64_t(1) << 32);
  for (auto* other : {&b, &c, &d}) {
    int same = 0;
    for (int64_t i = 0; i < n; ++i) same += a[i] == (*other)[i];
    EXPECT_LT(same, 5);
  }
}

TEST_F(RandomTest, Uniform) {
  const int64_t n = 100000;
  auto u = generate<float>(dev(), DType::f32, n, Distribution::Uniform, Scalar::of(2.0),
                           Scalar::of(5.0), 1, 0);
  Moments m = moments(u);
  EXPECT_GE(m.min, 2.0);
  EXPECT_LT(m.max, 5.0);
  EXPECT_NEAR(m.mean, 3.5, 0.02);
  EXPECT_NEAR(m.std, 3.0 / std::sqrt(12.0), 0.01);

  auto h = from_f16(generate<uint16_t>(dev(), DType::f16, n, Distribution::Uniform,
                                       Scalar::of(-1.0), Scalar::of(1.0), 2, 0));
  Moments mh = moments(h);
  EXPECT_GE(mh.min, -1.0);
  EXPECT_LT(mh.max, 1.0);
  EXPECT_NEAR(mh.mean, 0.0, 0.02);
  EXPECT_NEAR(mh.std, 2.0 / std::sqrt(12.0), 0.01);

  // A range so narrow that rounding would land on the upper bound.
  auto narrow = generate<float>(dev(), DType::f32, 1000, Distribution::Uniform, Scalar::of(1.0),
                                Scalar::of(1.0000001), 3, 0);
  for (float v : narrow) ASSERT_TRUE(v >= 1.0f && v < 1.0000001f) << v;
}

TEST_F(RandomTest, Normal) {
  const int64_t n = 100000;
  auto z = generate<float>(dev(), DType::f32, n, Distribution::Normal, Scalar::of(1.0),
                           Scalar::of(2.0), 5, 7);
  Moments m = moments(z);
  for (float v : z) ASSERT_TRUE(std::isfinite(v));
  EXPECT_NEAR(m.mean, 1.0, 0.03);
  EXPECT_NEAR(m.std, 2.0, 0.03);
  EXPECT_LT(m.min, 1.0 - 2.0 * 3.5);  // tails exist
  EXPECT_GT(m.max, 1.0 + 2.0 * 3.5);

  auto h = from_f16(generate<uint16_t>(dev(), DType::f16, n, Distribution::Normal, Scalar::of(0.0),
                                       Scalar::of(1.0), 6, 0));
  Moments mh = moments(h);
  EXPECT_NEAR(mh.mean, 0.0, 0.02);
  EXPECT_NEAR(mh.std, 1.0, 0.02);
}

TEST_F(RandomTest, RandInt) {
  const int64_t n = 20000;
  auto v = generate<int32_t>(dev(), DType::i32, n, Distribution::RandInt, Scalar::of_int(-5),
                             Scalar::of_int(5), 8, 0);
  std::set<int32_t> seen(v.begin(), v.end());
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(*seen.begin(), -5);
  EXPECT_EQ(*seen.rbegin(), 4);
  EXPECT_NEAR(moments(v).mean, -0.5, 0.1);

  // A 64-bit range: uses all 64 bits of the draw.
  const int64_t lo = -(int64_t(1) << 62), hi = int64_t(1) << 62;
  auto w = generate<int64_t>(dev(), DType::i64, n, Distribution::RandInt, Scalar::of_int(lo),
                             Scalar::of_int(hi), 9, 0);
  int64_t big = 0;
  for (int64_t x : w) {
    ASSERT_GE(x, lo);
    ASSERT_LT(x, hi);
    big += x > (int64_t(1) << 61) || x < -(int64_t(1) << 61);
  }
  EXPECT_NEAR(double(big) / n, 0.5, 0.05);

  auto u8 = generate<uint8_t>(dev(), DType::u8, n, Distribution::RandInt, Scalar::of_int(0),
                              Scalar::of_int(256), 10, 0);
  std::set<uint8_t> seen8(u8.begin(), u8.end());
  EXPECT_EQ(seen8.size(), 256u);

  auto f = generate<float>(dev(), DType::f32, n, Distribution::RandInt, Scalar::of_int(0),
                           Scalar::of_int(3), 11, 0);
  for (float x : f) ASSERT_TRUE(x == 0.0f || x == 1.0f || x == 2.0f) << x;
}

TEST_F(RandomTest, Bernoulli) {
  const int64_t n = 50000;
  auto b = generate<uint8_t>(dev(), DType::b8, n, Distribution::Bernoulli, Scalar::of(0.3),
                             Scalar::of(0.0), 12, 0);
  for (uint8_t x : b) ASSERT_LE(x, 1);
  EXPECT_NEAR(moments(b).mean, 0.3, 0.01);
  auto f = generate<float>(dev(), DType::f32, n, Distribution::Bernoulli, Scalar::of(0.75),
                           Scalar::of(0.0), 13, 0);
  for (float x : f) ASSERT_TRUE(x == 0.0f || x == 1.0f);
  EXPECT_NEAR(moments(f).mean, 0.75, 0.01);
  auto h = from_f16(generate<uint16_t>(dev(), DType::f16, 1000, Distribution::Bernoulli,
                                       Scalar::of(1.0), Scalar::of(0.0), 14, 0));
  EXPECT_EQ(h, std::vector<float>(1000, 1.0f));
  auto l = generate<int64_t>(dev(), DType::i64, 1000, Distribution::Bernoulli, Scalar::of(0.0),
                             Scalar::of(0.0), 15, 0);
  EXPECT_EQ(l, std::vector<int64_t>(1000, 0));
}

TEST_F(RandomTest, BadArguments) {
  Buffer buf(dev(), 64);
  auto expect_invalid = [&](DType dt, Distribution d, Scalar a, Scalar b) {
    try {
      ops::random(dev(), TensorRef::contiguous(buf.address(), dt, {4}), d, a, b, 0, 0);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    }
  };
  expect_invalid(DType::i32, Distribution::Uniform, Scalar::of(0.0), Scalar::of(1.0));
  expect_invalid(DType::i64, Distribution::Normal, Scalar::of(0.0), Scalar::of(1.0));
  expect_invalid(DType::i32, Distribution::RandInt, Scalar::of_int(3), Scalar::of_int(3));
  expect_invalid(DType::f32, Distribution::Bernoulli, Scalar::of(1.5), Scalar::of(0.0));
  // float64 draws need the device's float64 arithmetic.
  if (!dev().info().supports_fp64)
    expect_invalid(DType::f64, Distribution::Uniform, Scalar::of(0.0), Scalar::of(1.0));
  expect_invalid(DType::f64, Distribution::RandInt, Scalar::of_int(5), Scalar::of_int(2));
  // An empty tensor is fine.
  ops::random(dev(), TensorRef::contiguous(buf.address(), DType::f32, {0}), Distribution::Normal,
              Scalar::of(0.0), Scalar::of(1.0), 0, 0);
}

}  // namespace
}  // namespace vkml::test
