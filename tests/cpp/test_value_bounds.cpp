// Known value ranges of integer memory: kept only while nothing could have
// changed the bytes, so that an index check that trusts them is never wrong.
#include "vkml/ops/elementwise.h"
#include "vkml/ops/elementwise_batch.h"
#include "vkml/ops/optim.h"
#include "vkml/runtime/value_bounds.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

Access writes(Span s) {
  Access a;
  a.write(s);
  return a;
}

TEST(ValueBounds, CoveredAlignedViewsOfTheSameDtypeOnly) {
  ValueBounds b;
  b.note({1000, 1800}, DType::i64, {0, 9});  // 100 int64
  auto whole = b.lookup({1000, 1800}, DType::i64);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->lo, 0);
  EXPECT_EQ(whole->hi, 9);
  EXPECT_TRUE(b.lookup({1080, 1160}, DType::i64));   // a slice
  EXPECT_FALSE(b.lookup({1004, 1012}, DType::i64));  // straddles two elements
  EXPECT_FALSE(b.lookup({1000, 1800}, DType::i32));  // the bytes read as other values
  EXPECT_FALSE(b.lookup({992, 1800}, DType::i64));   // reaches outside
  EXPECT_FALSE(b.lookup({1000, 1808}, DType::i64));
}

TEST(ValueBounds, AnyDeclaredWriteOfTheBytesDropsThem) {
  ValueBounds b;
  b.note({1000, 1800}, DType::i64, {0, 9});
  b.note({4000, 4400}, DType::i32, {-3, 3});
  Access apart = writes({1800, 4000});  // touches neither
  b.written(&apart);
  EXPECT_TRUE(b.lookup({1000, 1800}, DType::i64));
  Access one = writes({1792, 1800});  // the last element
  b.written(&one);
  EXPECT_FALSE(b.lookup({1000, 1008}, DType::i64));
  EXPECT_TRUE(b.lookup({4000, 4400}, DType::i32));
  std::vector<Span> list{{5000, 5100}, {4396, 4400}};
  Access many;
  many.more_writes = list.data();
  many.n_more_writes = list.size();
  b.written(&many);
  EXPECT_FALSE(b.lookup({4000, 4400}, DType::i32));
}

TEST(ValueBounds, UndeclaredCommandsFreshMemoryAndNewNotesDropThem) {
  ValueBounds b;
  b.note({1000, 1800}, DType::i64, {0, 9});
  b.written(nullptr);
  EXPECT_FALSE(b.lookup({1000, 1800}, DType::i64));
  b.note({1000, 1800}, DType::i64, {0, 9});
  Access overflowing;
  for (int i = 0; i <= Access::kMax; ++i)
    overflowing.write({uint64_t(i) * 10, uint64_t(i) * 10 + 5});
  b.written(&overflowing);  // lost spans: anything may have changed
  EXPECT_FALSE(b.lookup({1000, 1800}, DType::i64));
  b.note({1000, 1800}, DType::i64, {0, 9});
  b.forget({0, 1001});
  EXPECT_FALSE(b.lookup({1000, 1800}, DType::i64));
  b.note({1000, 1800}, DType::i64, {0, 9});
  b.note({1400, 2200}, DType::i64, {5, 5});  // overlaps: the older range no longer holds
  EXPECT_FALSE(b.lookup({1000, 1400}, DType::i64));
  EXPECT_EQ(b.lookup({1400, 2200}, DType::i64)->hi, 5);
  for (uint64_t i = 0; i < 2 * ValueBounds::kMaxEntries; ++i)
    b.note({10000 + i * 8, 10008 + i * 8}, DType::i64, {1, 1});
  EXPECT_EQ(b.size(), ValueBounds::kMaxEntries);  // the oldest go first
  EXPECT_FALSE(b.lookup({1400, 2200}, DType::i64));
}

using ValueBoundsStreamTest = VkmlTest;

// Bounds noted on an int32 buffer (as if uploaded), then kernels run.
TEST_F(ValueBoundsStreamTest, KernelsDropWhatTheyWriteAndKeepTheRest) {
  ValueBounds& vb = dev().value_bounds();
  Buffer idx(dev(), 256 * 4), other(dev(), 256 * 4);
  const Span bytes{idx.address(), idx.address() + 256 * 4};
  vb.note(bytes, DType::i32, {0, 7});
  ops::fill(dev(), TensorRef::contiguous(other.address(), DType::f32, {256}), Scalar::of(1.0));
  EXPECT_TRUE(vb.lookup(bytes, DType::i32));
  ops::fill(dev(), TensorRef::contiguous(idx.address(), DType::i32, {256}), Scalar::of_int(9));
  EXPECT_FALSE(vb.lookup(bytes, DType::i32));
  vb.note(bytes, DType::i32, {9, 9});
  idx.write(std::vector<int32_t>(256, 3));  // an upload is a write too
  EXPECT_FALSE(vb.lookup(bytes, DType::i32));
}

TEST_F(ValueBoundsStreamTest, MultiTensorKernelsDropExactlyTheirTensors) {
  ValueBounds& vb = dev().value_bounds();
  Buffer a(dev(), 256 * 4), b(dev(), 256 * 4), kept(dev(), 256 * 4);
  auto span = [](const Buffer& x) { return Span{x.address(), x.address() + x.bytes()}; };
  vb.note(span(b), DType::i32, {0, 1});
  vb.note(span(kept), DType::i32, {0, 1});
  {
    ops::ElementwiseBatchScope scope;
    plus_one(dev(), b, a);  // held back: the lookup records it first
    EXPECT_FALSE(vb.lookup(span(b), DType::i32));
    scope.close();
  }
  EXPECT_TRUE(vb.lookup(span(kept), DType::i32));

  // A fused Adam step writes its param and state, not the grad (no grad scale).
  Buffer p(dev(), std::vector<float>(256, 1.f)), g(dev(), std::vector<float>(256, 0.5f));
  Buffer m(dev(), std::vector<float>(256, 0.f)), v(dev(), std::vector<float>(256, 0.f));
  Buffer step(dev(), std::vector<float>{1.f});
  for (const Buffer* x : {&p, &g, &m, &v}) vb.note(span(*x), DType::i32, {0, 1});
  ops::OptimParam op{p.address(), g.address(), m.address(), v.address(), 0, step.address(), 256};
  ops::OptimHyper h;
  h.lr = 0.1;
  ops::fused_optimizer_step(dev(), ops::OptimRule::adam, DType::f32, {op}, h);
  EXPECT_FALSE(vb.lookup(span(p), DType::i32));
  EXPECT_FALSE(vb.lookup(span(m), DType::i32));
  EXPECT_FALSE(vb.lookup(span(v), DType::i32));
  EXPECT_TRUE(vb.lookup(span(g), DType::i32));
  EXPECT_TRUE(vb.lookup(span(kept), DType::i32));
  std::vector<float> after = p.read<float>();
  EXPECT_NEAR(after[0], 0.9f, 1e-5f);  // Adam's first step moves by lr
}

}  // namespace
}  // namespace vkml::test
