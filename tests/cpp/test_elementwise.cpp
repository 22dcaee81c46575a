// A few elementwise kernels against C++ references.
#include <cmath>
#include <cstring>

#include "vkml/ops/elementwise.h"
#include "vkml/ops/elementwise_batch.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ElementwiseTest = VkmlTest;

// A [rows, cols] view of `address` with the given element strides.
TensorRef view2d(uint64_t address, DType dt, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  TensorRef t;
  t.address = address;
  t.dtype = dt;
  t.ndim = 2;
  t.sizes[0] = rows;
  t.sizes[1] = cols;
  t.strides[0] = rs;
  t.strides[1] = cs;
  return t;
}

ops::Elementwise binary(int op, DType dt, const TensorRef& out, const TensorRef& a,
                        const TensorRef& b) {
  ops::Elementwise e;
  e.op = op;
  e.dtype = dt;
  e.ninputs = 2;
  e.ptr[0] = out.address;
  e.ptr[1] = a.address;
  e.ptr[2] = b.address;
  ops::set_operand_from(e.layout, 0, out);
  ops::set_operand_from(e.layout, 1, a);
  ops::set_operand_from(e.layout, 2, b);
  return e;
}

TEST_F(ElementwiseTest, AddWithAlpha) {
  const int64_t n = 1000;
  auto a = random_floats(n, 1), b = random_floats(n, 2);
  Buffer ba(dev(), a), bb(dev(), b), bo(dev(), n * 4);
  auto e = binary(OP_ADD, DType::f32, TensorRef::contiguous(bo.address(), DType::f32, {n}),
                  TensorRef::contiguous(ba.address(), DType::f32, {n}),
                  TensorRef::contiguous(bb.address(), DType::f32, {n}));
  e.slot[2] = Scalar::of(2.5);
  ops::run_elementwise(dev(), e);
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = a[i] + 2.5f * b[i];
  expect_close(bo.read<float>(), want, 1e-6, 1e-6, "add");

  // int64 with a scalar second operand and alpha -1 (sub).
  std::vector<int64_t> ia(n);
  for (int64_t i = 0; i < n; ++i) ia[i] = i * 1000000007ll - 3;
  Buffer bia(dev(), ia), bio(dev(), n * 8);
  auto ei = binary(OP_ADD, DType::i64, TensorRef::contiguous(bio.address(), DType::i64, {n}),
                   TensorRef::contiguous(bia.address(), DType::i64, {n}),
                   TensorRef::contiguous(0, DType::i64, {n}));
  ei.scalar[1] = true;
  ei.slot[1] = Scalar::of_int(int64_t(1) << 40);
  ei.slot[2] = Scalar::of_int(-1);
  ops::run_elementwise(dev(), ei);
  std::vector<int64_t> want_i(n);
  for (int64_t i = 0; i < n; ++i) want_i[i] = ia[i] - (int64_t(1) << 40);
  EXPECT_EQ(bio.read<int64_t>(), want_i);
}

// Inside a batch scope, launches are held back into one dispatch; whatever
// else the thread does first records them, so a read-back inside the scope,
// or freeing an operand, still sees program order.
TEST_F(ElementwiseTest, BatchScopeHoldsBackAndKeepsProgramOrder) {
  const int64_t n = 1000;
  auto a = random_floats(n, 1), b = random_floats(n, 2);
  Buffer ba(dev(), a), bb(dev(), b), bo(dev(), n * 4), bo2(dev(), n * 4);
  auto add = [&](const Buffer& out, const Buffer& x, const Buffer& y) {
    auto t = [&](const Buffer& buf) {
      return TensorRef::contiguous(buf.address(), DType::f32, {n});
    };
    auto e = binary(OP_ADD, DType::f32, t(out), t(x), t(y));
    e.slot[2] = Scalar::of(1.0);  // alpha
    ops::run_elementwise(dev(), e);
  };
  dev().stream().synchronize();
  const uint64_t before = dev().stream().dispatch_count();
  {
    ops::ElementwiseBatchScope scope;
    add(bo, ba, bb);
    add(bo2, ba, ba);
    EXPECT_EQ(dev().stream().dispatch_count(), before);      // both held back
    std::vector<float> sum = bo.read<float>();               // the read-back sends them first
    EXPECT_EQ(dev().stream().dispatch_count(), before + 1);  // as one table
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sum[i], a[i] + b[i]) << i;
    add(bo2, bo, ba);  // reads bo, which the next one writes: sent before it
    add(bo, bb, bb);
    EXPECT_EQ(dev().stream().dispatch_count(), before + 2);
    scope.close();
    EXPECT_EQ(dev().stream().dispatch_count(), before + 3);
  }
  std::vector<float> x = bo.read<float>(), y = bo2.read<float>();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(x[i], b[i] + b[i]) << i;
    ASSERT_EQ(y[i], (a[i] + b[i]) + a[i]) << i;
  }
  const uint64_t sent = dev().stream().dispatch_count();
  {
    // Querying the stream sends held-back work too (before taking its lock, so
    // retiring finished batches cannot re-enter it).
    ops::ElementwiseBatchScope scope;
    add(bo2, ba, bb);
    dev().stream().completed_value();
    EXPECT_EQ(dev().stream().dispatch_count(), sent + 1);
    scope.close();
  }
}

TEST_F(ElementwiseTest, MulBroadcastWithZeroStrides) {
  const int64_t R = 7, C = 33;
  auto a = random_floats(R * C, 3), col = random_floats(R, 4), row = random_floats(C, 5);
  Buffer ba(dev(), a), bc(dev(), col), br(dev(), row), bo(dev(), R * C * 4);
  TensorRef out = TensorRef::contiguous(bo.address(), DType::f32, {R, C});
  // a * row (row broadcast over rows), then out * col (column broadcast over cols).
  ops::run_elementwise(dev(), binary(OP_MUL, DType::f32, out,
                                     TensorRef::contiguous(ba.address(), DType::f32, {R, C}),
                                     view2d(br.address(), DType::f32, R, C, 0, 1)));
  ops::run_elementwise(
      dev(), binary(OP_MUL, DType::f32, out, out, view2d(bc.address(), DType::f32, R, C, 1, 0)));
  std::vector<float> want(R * C);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) want[i * C + j] = a[i * C + j] * row[j] * col[i];
  expect_close(bo.read<float>(), want, 1e-6, 0, "mul");
}

TEST_F(ElementwiseTest, CompareToBool) {
  const int64_t n = 300;
  std::vector<int32_t> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) a[i] = int32_t(i % 17) - 8, b[i] = int32_t(i % 5) - 2;
  Buffer ba(dev(), a), bb(dev(), b), bo(dev(), n);
  auto e = binary(OP_LT, DType::i32, TensorRef::contiguous(bo.address(), DType::b8, {n}),
                  TensorRef::contiguous(ba.address(), DType::i32, {n}),
                  TensorRef::contiguous(bb.address(), DType::i32, {n}));
  e.compare = true;
  ops::run_elementwise(dev(), e);
  std::vector<uint8_t> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = a[i] < b[i];
  EXPECT_EQ(bo.read<uint8_t>(n), want);
}

TEST_F(ElementwiseTest, Where) {
  const int64_t n = 500;
  auto x = random_floats(n, 6), y = random_floats(n, 7);
  std::vector<uint8_t> cond(n);
  for (int64_t i = 0; i < n; ++i) cond[i] = (i * 7) % 3 == 0;
  Buffer bc(dev(), cond), bx(dev(), x), by(dev(), y), bo(dev(), n * 4);
  ops::Elementwise e;
  e.op = OP_WHERE;
  e.dtype = DType::f32;
  e.flags = EW_IN0_BOOL;
  e.ninputs = 3;
  e.ptr[0] = bo.address();
  e.ptr[1] = bc.address();
  e.ptr[2] = bx.address();
  e.ptr[3] = by.address();
  ops::set_operand_from(e.layout, 0, TensorRef::contiguous(bo.address(), DType::f32, {n}));
  ops::set_operand_from(e.layout, 1, TensorRef::contiguous(bc.address(), DType::b8, {n}));
  ops::set_operand_from(e.layout, 2, TensorRef::contiguous(bx.address(), DType::f32, {n}));
  ops::set_operand_from(e.layout, 3, TensorRef::contiguous(by.address(), DType::f32, {n}));
  ops::run_elementwise(dev(), e);
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = cond[i] ? x[i] : y[i];
  EXPECT_EQ(bo.read<float>(), want);
}

TEST_F(ElementwiseTest, Fill) {
  // A strided fill touches only its elements.
  Buffer b(dev(), 20 * 4);
  ops::fill(dev(), TensorRef::contiguous(b.address(), DType::i32, {20}), Scalar::of_int(-1));
  ops::fill(dev(), view2d(b.address(), DType::i32, 4, 2, 5, 2), Scalar::of_int(9));
  std::vector<int32_t> want(20, -1);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) want[i * 5 + j * 2] = 9;
  EXPECT_EQ(b.read<int32_t>(), want);

  Buffer h(dev(), 10 * 2);
  ops::fill(dev(), TensorRef::contiguous(h.address(), DType::f16, {10}), Scalar::of(1.5));
  EXPECT_EQ(from_f16(h.read<uint16_t>()), std::vector<float>(10, 1.5f));

  Buffer l(dev(), 3 * 8);
  ops::fill(dev(), TensorRef::contiguous(l.address(), DType::i64, {3}),
            Scalar::of_int(int64_t(1) << 50));
  EXPECT_EQ(l.read<int64_t>(), std::vector<int64_t>(3, int64_t(1) << 50));

  Buffer z(dev(), 5);
  ops::fill(dev(), TensorRef::contiguous(z.address(), DType::b8, {5}), Scalar::of(3.0));
  EXPECT_EQ(z.read<uint8_t>(5), std::vector<uint8_t>(5, 1));
}

TEST_F(ElementwiseTest, Arange) {
  const int64_t n = 1000;
  Buffer f(dev(), n * 4), l(dev(), n * 8);
  ops::arange(dev(), TensorRef::contiguous(f.address(), DType::f32, {n}), Scalar::of(-2.0),
              Scalar::of(0.5));
  ops::arange(dev(), TensorRef::contiguous(l.address(), DType::i64, {n}), Scalar::of_int(10),
              Scalar::of_int(-3));
  std::vector<float> wf(n);
  std::vector<int64_t> wl(n);
  for (int64_t i = 0; i < n; ++i) wf[i] = -2.0f + 0.5f * float(i), wl[i] = 10 - 3 * i;
  EXPECT_EQ(f.read<float>(), wf);
  EXPECT_EQ(l.read<int64_t>(), wl);
}

// bfloat16 stores 16 bits and computes in fp32, rounding to nearest even.
TEST_F(ElementwiseTest, Bfloat16MulAndPackedParams) {
  const int64_t n = 257;
  auto a = random_floats(n, 8, -4.0f, 4.0f), b = random_floats(n, 9, -4.0f, 4.0f);
  auto to_bf16 = [](const std::vector<float>& v) {
    std::vector<uint16_t> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &v[i], 4);
      r[i] = uint16_t(u >> 16);  // truncation: exact bf16 inputs
    }
    return r;
  };
  auto from_bf16 = [](uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  auto round_bf16 = [&](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return from_bf16(uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16));
  };
  auto ha = to_bf16(a), hb = to_bf16(b);
  Buffer ba(dev(), ha), bb(dev(), hb), bo(dev(), n * 2);
  auto ref = [&](uint64_t addr) { return TensorRef::contiguous(addr, DType::bf16, {n}); };
  ops::run_elementwise(
      dev(), binary(OP_MUL, DType::bf16, ref(bo.address()), ref(ba.address()), ref(bb.address())));
  auto got = bo.read<uint16_t>(n);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(from_bf16(got[i]), round_bf16(from_bf16(ha[i]) * from_bf16(hb[i]))) << i;

  // leaky_relu with its slope as a packed fp32 parameter (fparam 0 = low half of slot 2).
  ops::Elementwise e;
  e.op = OP_LEAKY_RELU;
  e.dtype = DType::bf16;
  e.ninputs = 1;
  e.ptr[0] = bo.address();
  e.ptr[1] = ba.address();
  e.slot[2] = Scalar::of(0.25);
  e.has_hi[2] = true;
  e.hi[2] = 123.0;  // unused high half
  ops::set_operand_from(e.layout, 0, ref(bo.address()));
  ops::set_operand_from(e.layout, 1, ref(ba.address()));
  ops::run_elementwise(dev(), e);
  got = bo.read<uint16_t>(n);
  for (int64_t i = 0; i < n; ++i) {
    float x = from_bf16(ha[i]);
    EXPECT_EQ(from_bf16(got[i]), round_bf16(x > 0 ? x : x * 0.25f)) << i;
  }
}

// float64 kernels compute in double (where the device has shaderFloat64).
TEST_F(ElementwiseTest, Float64Arithmetic) {
  if (!ops::elementwise_supported(dev(), DType::f64)) GTEST_SKIP() << "no shaderFloat64";
  // The exp/log family is f64_math.glsl's, pow and erfinv f64_pow_erf.glsl's, lgamma
  // f64_gamma.glsl's (polygamma too), all only in the f64 _special variant; ndtri has no
  // float64 algorithm yet.
  EXPECT_TRUE(ops::elementwise_has_op(DType::f64, OP_ERFINV));
  EXPECT_TRUE(ops::elementwise_detail::special_only(DType::f64, OP_ERFINV));
  EXPECT_TRUE(ops::elementwise_detail::special_only(DType::f64, OP_POLYGAMMA));
  EXPECT_FALSE(ops::elementwise_has_op(DType::f64, OP_NDTRI));
  EXPECT_TRUE(ops::elementwise_has_op(DType::f64, OP_LGAMMA));
  EXPECT_TRUE(ops::elementwise_detail::special_only(DType::f64, OP_LGAMMA));
  EXPECT_TRUE(ops::elementwise_has_op(DType::f64, OP_POW));
  EXPECT_TRUE(ops::elementwise_has_op(DType::f64, OP_EXP));
  EXPECT_TRUE(ops::elementwise_has_op(DType::f64, OP_SQRT));
  EXPECT_TRUE(ops::elementwise_detail::special_only(DType::f64, OP_POW));
  EXPECT_TRUE(ops::elementwise_detail::special_only(DType::f64, OP_EXP));
  EXPECT_FALSE(ops::elementwise_detail::special_only(DType::f64, OP_ADD));
  EXPECT_FALSE(ops::elementwise_detail::special_only(DType::f32, OP_EXP));
  const int64_t n = 100;
  std::vector<double> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) a[i] = 1.0 + double(i) * 1e-12, b[i] = double(i) / 7.0 + 0.5;
  Buffer ba(dev(), a), bb(dev(), b), bo(dev(), n * 8);
  auto ref = [&](uint64_t addr) { return TensorRef::contiguous(addr, DType::f64, {n}); };
  auto e = binary(OP_ADD, DType::f64, ref(bo.address()), ref(ba.address()), ref(bb.address()));
  e.slot[2] = Scalar::of(1.0 / 3.0);
  ops::run_elementwise(dev(), e);
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = a[i] + (1.0 / 3.0) * b[i];
  auto got = bo.read<double>(n);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << i;
  ops::run_elementwise(
      dev(), binary(OP_DIV, DType::f64, ref(bo.address()), ref(ba.address()), ref(bb.address())));
  got = bo.read<double>(n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got[i], a[i] / b[i]) << i;
  // pow through the _special variant: within a few ulps of the C library's
  ops::run_elementwise(
      dev(), binary(OP_POW, DType::f64, ref(bo.address()), ref(bb.address()), ref(ba.address())));
  got = bo.read<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    const double want_pow = std::pow(b[i], a[i]);
    EXPECT_NEAR(got[i], want_pow, 4e-16 * std::abs(want_pow)) << i;
  }
}

}  // namespace
}  // namespace vkml::test
