// The caching allocator: reuse without Vulkan calls, statistics, cache release, OOM.
#include "vkml_test.h"

namespace vkml::test {
namespace {

// The totals over all pools.
int64_t allocated(const MemoryStats& s) { return s.allocated_bytes[kAllPools].current; }
int64_t reserved(const MemoryStats& s) { return s.reserved_bytes[kAllPools].current; }
int64_t segments_made(const MemoryStats& s) { return s.segments[kAllPools].allocated; }

class AllocatorTest : public VkmlTest {
 protected:
  void SetUp() override {
    VkmlTest::SetUp();
    // Start from an empty pool: every other test frees what it allocates.
    dev().release_cached_memory();
    ASSERT_EQ(allocated(dev().memory().stats()), 0) << "memory leaked by an earlier test";
  }
};

TEST_F(AllocatorTest, FreedChunkIsReused) {
  MemoryPool& pool = dev().memory();
  for (uint64_t size : {1000ull, 3ull << 20, 30ull << 20}) {
    SCOPED_TRACE(size);
    Allocation a = pool.allocate(size);
    int64_t blocks = segments_made(pool.stats());
    pool.free(a.address);
    Allocation b = pool.allocate(size);
    EXPECT_EQ(b.address, a.address);
    EXPECT_EQ(segments_made(pool.stats()), blocks);
    pool.free(b.address);
  }
}

TEST_F(AllocatorTest, SmallAllocationsShareABlock) {
  MemoryPool& pool = dev().memory();
  Allocation a = pool.allocate(4096);
  int64_t blocks = segments_made(pool.stats());
  Allocation b = pool.allocate(4096);
  EXPECT_EQ(segments_made(pool.stats()), blocks);
  EXPECT_NE(a.address, b.address);
  EXPECT_EQ(a.address % MemoryPool::kAlignment, 0u);
  EXPECT_EQ(b.address % MemoryPool::kAlignment, 0u);
  pool.free(a.address);
  pool.free(b.address);
}

TEST_F(AllocatorTest, Statistics) {
  MemoryPool& pool = dev().memory();
  pool.reset_peak();
  pool.reset_accumulated();
  MemoryStats s0 = pool.stats();
  Allocation a = pool.allocate(1000);     // a small block's chunk
  Allocation b = pool.allocate(5 << 20);  // a large block's
  MemoryStats s1 = pool.stats();
  EXPECT_EQ(a.size, 1024u);  // rounded up to the 256-byte alignment
  EXPECT_GE(b.size, uint64_t(5 << 20));
  EXPECT_EQ(allocated(s1), allocated(s0) + int64_t(a.size + b.size));
  EXPECT_EQ(s1.allocated_bytes[kSmallPool].current, s0.allocated_bytes[kSmallPool].current + 1024);
  EXPECT_EQ(s1.allocated_bytes[kLargePool].current,
            s0.allocated_bytes[kLargePool].current + int64_t(b.size));
  EXPECT_EQ(s1.requested_bytes[kAllPools].current,
            s0.requested_bytes[kAllPools].current + 1000 + (5 << 20));
  EXPECT_GE(reserved(s1), allocated(s1));
  EXPECT_EQ(s1.allocated_bytes[kAllPools].peak, allocated(s1));
  EXPECT_EQ(s1.allocations[kAllPools].allocated, 2);
  EXPECT_EQ(s1.allocations[kAllPools].current, s0.allocations[kAllPools].current + 2);
  pool.free(b.address);
  MemoryStats s2 = pool.stats();
  EXPECT_EQ(allocated(s2), allocated(s0) + int64_t(a.size));
  EXPECT_EQ(s2.allocated_bytes[kAllPools].peak, allocated(s1));  // peak stays
  EXPECT_EQ(s2.allocated_bytes[kAllPools].freed, int64_t(b.size));
  EXPECT_EQ(reserved(s2), reserved(s1));  // cached, not returned
  pool.reset_peak();
  EXPECT_EQ(pool.stats().allocated_bytes[kAllPools].peak, allocated(s2));
  pool.free(a.address);
  EXPECT_EQ(allocated(pool.stats()), allocated(s0));
  pool.reset_accumulated();
  EXPECT_EQ(pool.stats().allocations[kAllPools].allocated, 0);
  EXPECT_EQ(pool.stats().allocated_bytes[kAllPools].freed, 0);
}

TEST_F(AllocatorTest, HeapInfo) {
  MemoryPool& pool = dev().memory();
  MemoryPool::HeapInfo before = pool.heap_info();
  EXPECT_GT(before.total, 0u);
  EXPECT_LE(before.free, before.total);
  Allocation a = pool.allocate(64 << 20);  // a new block, which the free memory loses
  MemoryPool::HeapInfo after = pool.heap_info();
  EXPECT_EQ(after.total, before.total);
  EXPECT_LT(after.free, before.free);
  pool.free(a.address);
}

TEST_F(AllocatorTest, EmptyCacheReleasesReserved) {
  MemoryPool& pool = dev().memory();
  std::vector<uint64_t> addrs;
  for (int i = 0; i < 4; ++i) addrs.push_back(pool.allocate(3 << 20).address);
  for (uint64_t a : addrs) pool.free(a);
  MemoryStats before = pool.stats();
  EXPECT_GT(reserved(before), 0);
  dev().release_cached_memory();
  MemoryStats after = pool.stats();
  EXPECT_EQ(reserved(after), 0);
  EXPECT_GT(after.segments[kAllPools].freed, before.segments[kAllPools].freed);
  // A live chunk keeps its block.
  Allocation keep = pool.allocate(1000);
  dev().release_cached_memory();
  EXPECT_GT(reserved(pool.stats()), 0);
  pool.free(keep.address);
}

TEST_F(AllocatorTest, OutOfMemoryThrowsAndPoolStillWorks) {
  MemoryPool& pool = dev().memory();
  try {
    pool.allocate(1ull << 50);  // 1 PiB
    ADD_FAILURE() << "a 1 PiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_GE(pool.stats().ooms, 1);
  std::vector<int32_t> host = {1, 2, 3, 4};
  Buffer buf(dev(), host);
  EXPECT_EQ(buf.read<int32_t>(), host);
}

}  // namespace
}  // namespace vkml::test
