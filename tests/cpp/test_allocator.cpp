// The caching allocator: reuse without Vulkan calls, statistics, cache release, OOM.
#include "vkml_test.h"

namespace vkml::test {
namespace {

class AllocatorTest : public VkmlTest {
 protected:
  void SetUp() override {
    VkmlTest::SetUp();
    // Start from an empty pool: every other test frees what it allocates.
    dev().release_cached_memory();
    ASSERT_EQ(dev().memory().stats().allocated, 0u) << "memory leaked by an earlier test";
  }
};

TEST_F(AllocatorTest, FreedChunkIsReused) {
  MemoryPool& pool = dev().memory();
  for (uint64_t size : {1000ull, 3ull << 20, 30ull << 20}) {
    SCOPED_TRACE(size);
    Allocation a = pool.allocate(size);
    uint64_t blocks = pool.stats().block_alloc_count;
    pool.free(a.address);
    Allocation b = pool.allocate(size);
    EXPECT_EQ(b.address, a.address);
    EXPECT_EQ(pool.stats().block_alloc_count, blocks);
    pool.free(b.address);
  }
}

TEST_F(AllocatorTest, SmallAllocationsShareABlock) {
  MemoryPool& pool = dev().memory();
  Allocation a = pool.allocate(4096);
  uint64_t blocks = pool.stats().block_alloc_count;
  Allocation b = pool.allocate(4096);
  EXPECT_EQ(pool.stats().block_alloc_count, blocks);
  EXPECT_NE(a.address, b.address);
  EXPECT_EQ(a.address % MemoryPool::kAlignment, 0u);
  EXPECT_EQ(b.address % MemoryPool::kAlignment, 0u);
  pool.free(a.address);
  pool.free(b.address);
}

TEST_F(AllocatorTest, Statistics) {
  MemoryPool& pool = dev().memory();
  pool.reset_peak();
  MemoryStats s0 = pool.stats();
  Allocation a = pool.allocate(1000);
  Allocation b = pool.allocate(5 << 20);
  MemoryStats s1 = pool.stats();
  EXPECT_EQ(a.size, 1024u);  // rounded up to the 256-byte alignment
  EXPECT_GE(b.size, uint64_t(5 << 20));
  EXPECT_EQ(s1.allocated, s0.allocated + a.size + b.size);
  EXPECT_GE(s1.reserved, s1.allocated);
  EXPECT_EQ(s1.peak_allocated, s1.allocated);
  EXPECT_EQ(s1.alloc_count, s0.alloc_count + 2);
  pool.free(b.address);
  MemoryStats s2 = pool.stats();
  EXPECT_EQ(s2.allocated, s0.allocated + a.size);
  EXPECT_EQ(s2.peak_allocated, s1.allocated);  // peak stays
  EXPECT_EQ(s2.reserved, s1.reserved);         // cached, not returned
  pool.reset_peak();
  EXPECT_EQ(pool.stats().peak_allocated, s2.allocated);
  pool.free(a.address);
  EXPECT_EQ(pool.stats().allocated, s0.allocated);
}

TEST_F(AllocatorTest, EmptyCacheReleasesReserved) {
  MemoryPool& pool = dev().memory();
  std::vector<uint64_t> addrs;
  for (int i = 0; i < 4; ++i) addrs.push_back(pool.allocate(3 << 20).address);
  for (uint64_t a : addrs) pool.free(a);
  MemoryStats before = pool.stats();
  EXPECT_GT(before.reserved, 0u);
  dev().release_cached_memory();
  MemoryStats after = pool.stats();
  EXPECT_EQ(after.reserved, 0u);
  EXPECT_GT(after.block_free_count, before.block_free_count);
  // A live chunk keeps its block.
  Allocation keep = pool.allocate(1000);
  dev().release_cached_memory();
  EXPECT_GT(pool.stats().reserved, 0u);
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
  std::vector<int32_t> host = {1, 2, 3, 4};
  Buffer buf(dev(), host);
  EXPECT_EQ(buf.read<int32_t>(), host);
}

}  // namespace
}  // namespace vkml::test
