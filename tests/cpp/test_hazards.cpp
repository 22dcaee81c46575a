// Barrier placement: the hazard tracker fences only true dependencies, and the
// stream's results stay right when independent kernels are left unfenced.
#include "vkml/ops/elementwise.h"
#include "vkml/runtime/hazards.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

Access rw(Span read, Span write) {
  Access a;
  a.read(read);
  a.write(write);
  return a;
}

TEST(HazardTracker, IndependentCommandsNeedNoBarrier) {
  HazardTracker h;
  Access a = rw({0, 100}, {100, 200});
  Access b = rw({0, 100}, {200, 300});  // reads what a reads: no hazard
  EXPECT_FALSE(h.needs_barrier(&a));
  h.record(&a);
  EXPECT_FALSE(h.needs_barrier(&b));
}

TEST(HazardTracker, ReadAfterWriteWriteAfterWriteAndWriteAfterRead) {
  HazardTracker h;
  Access a = rw({0, 100}, {100, 200});
  h.record(&a);
  Access raw = rw({150, 160}, {500, 600});
  Access waw = rw({700, 800}, {199, 201});
  Access war = rw({700, 800}, {99, 101});
  EXPECT_TRUE(h.needs_barrier(&raw));
  EXPECT_TRUE(h.needs_barrier(&waw));
  EXPECT_TRUE(h.needs_barrier(&war));
  Access touching = rw({200, 300}, {300, 400});  // [100,200) and [200,300) do not overlap
  EXPECT_FALSE(h.needs_barrier(&touching));
  h.fenced();
  EXPECT_FALSE(h.needs_barrier(&raw));
}

TEST(HazardTracker, UnknownAndOverflowingAccessIsFencedOnBothSides) {
  HazardTracker h;
  EXPECT_TRUE(h.needs_barrier(nullptr));
  h.fenced();
  h.record(nullptr);
  Access far = rw({1000, 1100}, {2000, 2100});
  EXPECT_TRUE(h.needs_barrier(&far));  // the unknown command may have written anything
  h.fenced();
  Access many;
  for (int i = 0; i <= Access::kMax; ++i) many.read({uint64_t(i) * 10, uint64_t(i) * 10 + 5});
  EXPECT_TRUE(many.overflow);
  EXPECT_TRUE(h.needs_barrier(&many));
}

TEST(HazardTracker, LongUnfencedRunsAreBounded) {
  HazardTracker h;
  int barriers = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    Access a = rw({i * 200, i * 200 + 100}, {i * 200 + 100, i * 200 + 200});
    if (h.needs_barrier(&a)) {
      h.fenced();
      ++barriers;
    }
    h.record(&a);
  }
  EXPECT_GT(barriers, 0);    // the pending lists are capped
  EXPECT_LT(barriers, 100);  // but independent work mostly runs unfenced
}

TEST(HazardTracker, MultiTensorListsAreComparedSpanBySpan) {
  HazardTracker h;
  Access a = rw({0, 100}, {100, 200});
  h.record(&a);
  std::vector<Span> reads{{1000, 1100}, {2000, 2100}}, writes{{3000, 3100}, {4000, 4100}};
  Access many = Access::of_lists(reads, writes);
  EXPECT_FALSE(h.needs_barrier(&many));
  h.record(&many);
  Access raw = rw({4050, 4060}, {9000, 9100});  // reads a listed write
  EXPECT_TRUE(h.needs_barrier(&raw));
  Access war = rw({9000, 9100}, {2050, 2060});  // writes a listed read
  EXPECT_TRUE(h.needs_barrier(&war));
  Access apart = rw({5000, 5100}, {6000, 6100});
  EXPECT_FALSE(h.needs_barrier(&apart));
  // A listed read of memory a pending command writes needs the barrier as well.
  std::vector<Span> late{{150, 160}};
  Access after;
  after.more_reads = late.data();
  after.n_more_reads = late.size();
  EXPECT_TRUE(h.needs_barrier(&after));
  // Lists too long to compare or keep are fenced on both sides.
  std::vector<Span> huge(HazardTracker::kMaxCompared + 1, Span{10000, 10100});
  Access big;
  big.more_writes = huge.data();
  big.n_more_writes = huge.size();
  h.fenced();
  EXPECT_TRUE(h.needs_barrier(&big));
  h.record(&big);
  EXPECT_TRUE(h.needs_barrier(&apart));
}

using HazardStreamTest = VkmlTest;

TEST_F(HazardStreamTest, DependentChainIsFencedIndependentFillsAreNot) {
  Stream& s = dev().stream();
  const int n = 8;
  std::vector<Buffer> bufs;
  for (int i = 0; i < n; ++i) bufs.emplace_back(dev(), 256 * 4);
  s.synchronize();
  uint64_t b0 = s.barrier_count();
  for (int i = 0; i < n; ++i)
    ops::fill(dev(), TensorRef::contiguous(bufs[i].address(), DType::f32, {256}),
              Scalar::of(double(i) * 10));
  uint64_t independent = s.barrier_count() - b0;
  EXPECT_LE(independent, 1u);
  // out[i] = out[i-1] + 1 along the buffers: each step reads the previous write. The
  // first step's barrier depends on where the fills were fenced (earlier tests can leave
  // unfenced reads of this memory), so the count starts after it.
  for (int i = 1; i < n; ++i) {
    if (i == 2) b0 = s.barrier_count();
    plus_one(dev(), bufs[i], bufs[i - 1]);
  }
  EXPECT_EQ(s.barrier_count() - b0, uint64_t(n - 2));
  EXPECT_EQ(bufs[n - 1].read<float>(), std::vector<float>(256, float(n - 1)));
}

// Staging copies declare their bytes: an upload waits for an earlier kernel that reads
// its destination, a kernel reading the upload waits for it, and others do not.
TEST_F(HazardStreamTest, UploadsAreOrderedByTheirBytes) {
  Stream& s = dev().stream();
  Buffer a(dev(), 256 * 4), b(dev(), 256 * 4), c(dev(), 256 * 4), d(dev(), 256 * 4);
  ops::fill(dev(), TensorRef::contiguous(a.address(), DType::f32, {256}), Scalar::of(1.0));
  plus_one(dev(), b, a);  // reads a
  uint64_t b0 = s.barrier_count();
  a.write(std::vector<float>(256, 5.0f));  // rewrites what b's kernel reads
  EXPECT_EQ(s.barrier_count() - b0, 1u);
  ops::fill(dev(), TensorRef::contiguous(d.address(), DType::f32, {256}), Scalar::of(3.0));
  EXPECT_EQ(s.barrier_count() - b0, 1u);  // independent of the upload
  plus_one(dev(), c, a);                  // reads the upload
  EXPECT_EQ(s.barrier_count() - b0, 2u);
  EXPECT_EQ(b.read<float>(), std::vector<float>(256, 2.0f));
  EXPECT_EQ(c.read<float>(), std::vector<float>(256, 6.0f));
}

}  // namespace
}  // namespace vkml::test
