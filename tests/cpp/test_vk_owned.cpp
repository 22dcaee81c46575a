// Vulkan handles own themselves: a failure between a handle's creation and its
// hand-over leaks nothing. Each test replaces one entry point with a failing stub
// (the entry points are loaded function pointers) and counts, through forwarding
// stubs, what was created and destroyed.
#include <utility>

#include "vkml/runtime/pipelines.h"
#include "vkml/runtime/stream.h"
#include "vkml/runtime/vk_owned.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using VkOwnedTest = VkmlTest;

// Puts `stub` in place of an entry point for the scope, then the real one back.
template <class Fn>
class Replaced {
 public:
  Replaced(Fn& slot, Fn stub) : slot_(slot), real_(std::exchange(slot, stub)) {}
  ~Replaced() { slot_ = real_; }
  Replaced(const Replaced&) = delete;
  Fn real() const { return real_; }

 private:
  Fn& slot_;
  Fn real_;
};

// Live handles of each kind, as the forwarding stubs see them.
int g_buffers = 0, g_memories = 0, g_pools = 0, g_layouts = 0;
PFN_vkCreateBuffer real_create_buffer;
PFN_vkDestroyBuffer real_destroy_buffer;
PFN_vkAllocateMemory real_allocate_memory;
PFN_vkFreeMemory real_free_memory;
PFN_vkCreateCommandPool real_create_pool;
PFN_vkDestroyCommandPool real_destroy_pool;
PFN_vkCreatePipelineLayout real_create_layout;
PFN_vkDestroyPipelineLayout real_destroy_layout;

VkResult VKAPI_PTR count_create_buffer(VkDevice d, const VkBufferCreateInfo* i,
                                       const VkAllocationCallbacks* a, VkBuffer* b) {
  VkResult r = real_create_buffer(d, i, a, b);
  if (r == VK_SUCCESS) ++g_buffers;
  return r;
}
void VKAPI_PTR count_destroy_buffer(VkDevice d, VkBuffer b, const VkAllocationCallbacks* a) {
  if (b) --g_buffers;
  real_destroy_buffer(d, b, a);
}
VkResult VKAPI_PTR count_allocate_memory(VkDevice d, const VkMemoryAllocateInfo* i,
                                         const VkAllocationCallbacks* a, VkDeviceMemory* m) {
  VkResult r = real_allocate_memory(d, i, a, m);
  if (r == VK_SUCCESS) ++g_memories;
  return r;
}
void VKAPI_PTR count_free_memory(VkDevice d, VkDeviceMemory m, const VkAllocationCallbacks* a) {
  if (m) --g_memories;
  real_free_memory(d, m, a);
}
VkResult VKAPI_PTR count_create_pool(VkDevice d, const VkCommandPoolCreateInfo* i,
                                     const VkAllocationCallbacks* a, VkCommandPool* p) {
  VkResult r = real_create_pool(d, i, a, p);
  if (r == VK_SUCCESS) ++g_pools;
  return r;
}
void VKAPI_PTR count_destroy_pool(VkDevice d, VkCommandPool p, const VkAllocationCallbacks* a) {
  if (p) --g_pools;
  real_destroy_pool(d, p, a);
}
VkResult VKAPI_PTR count_create_layout(VkDevice d, const VkPipelineLayoutCreateInfo* i,
                                       const VkAllocationCallbacks* a, VkPipelineLayout* l) {
  VkResult r = real_create_layout(d, i, a, l);
  if (r == VK_SUCCESS) ++g_layouts;
  return r;
}
void VKAPI_PTR count_destroy_layout(VkDevice d, VkPipelineLayout l,
                                    const VkAllocationCallbacks* a) {
  if (l) --g_layouts;
  real_destroy_layout(d, l, a);
}

VkResult VKAPI_PTR fail_bind(VkDevice, VkBuffer, VkDeviceMemory, VkDeviceSize) {
  return VK_ERROR_OUT_OF_DEVICE_MEMORY;
}
VkResult VKAPI_PTR fail_map(VkDevice, VkDeviceMemory, VkDeviceSize, VkDeviceSize, VkMemoryMapFlags,
                            void**) {
  return VK_ERROR_MEMORY_MAP_FAILED;
}
VkResult VKAPI_PTR fail_semaphore(VkDevice, const VkSemaphoreCreateInfo*,
                                  const VkAllocationCallbacks*, VkSemaphore*) {
  return VK_ERROR_OUT_OF_HOST_MEMORY;
}
VkResult VKAPI_PTR fail_cache(VkDevice, const VkPipelineCacheCreateInfo*,
                              const VkAllocationCallbacks*, VkPipelineCache*) {
  return VK_ERROR_OUT_OF_HOST_MEMORY;
}

// Counts live buffers and memories while it exists.
struct CountBlocks {
  Replaced<PFN_vkCreateBuffer> cb{vk::vkCreateBuffer, &count_create_buffer};
  Replaced<PFN_vkDestroyBuffer> db{vk::vkDestroyBuffer, &count_destroy_buffer};
  Replaced<PFN_vkAllocateMemory> am{vk::vkAllocateMemory, &count_allocate_memory};
  Replaced<PFN_vkFreeMemory> fm{vk::vkFreeMemory, &count_free_memory};
  CountBlocks() {
    real_create_buffer = cb.real();
    real_destroy_buffer = db.real();
    real_allocate_memory = am.real();
    real_free_memory = fm.real();
    g_buffers = g_memories = 0;
  }
};

// A request no cached block can serve: a new block is made for it.
constexpr uint64_t kFreshBlock = 48ull << 20;

TEST_F(VkOwnedTest, AFailedBindLeaksNeitherBufferNorMemory) {
  MemoryPool& pool = dev().memory();
  pool.empty_cache();
  {
    CountBlocks counts;
    Replaced<PFN_vkBindBufferMemory> bind(vk::vkBindBufferMemory, &fail_bind);
    EXPECT_THROW(pool.allocate(kFreshBlock), Error);
    EXPECT_EQ(g_buffers, 0);
    EXPECT_EQ(g_memories, 0);
  }
  Allocation a = pool.allocate(kFreshBlock);  // the pool still works
  EXPECT_NE(a.address, 0u);
  pool.free(a.address);
}

TEST_F(VkOwnedTest, AFailedMapLeaksNeitherBufferNorMemory) {
  MemoryPool& staging = dev().staging();
  staging.empty_cache();
  {
    CountBlocks counts;
    Replaced<PFN_vkMapMemory> map(vk::vkMapMemory, &fail_map);
    EXPECT_THROW(staging.allocate(kFreshBlock), Error);
    EXPECT_EQ(g_buffers, 0);
    EXPECT_EQ(g_memories, 0);
  }
  Allocation a = staging.allocate(kFreshBlock);
  EXPECT_NE(a.host, nullptr);
  staging.free(a.address);
}

TEST_F(VkOwnedTest, AStreamWhoseSemaphoreFailsDestroysItsCommandPool) {
  Replaced<PFN_vkCreateCommandPool> cp(vk::vkCreateCommandPool, &count_create_pool);
  Replaced<PFN_vkDestroyCommandPool> dp(vk::vkDestroyCommandPool, &count_destroy_pool);
  real_create_pool = cp.real();
  real_destroy_pool = dp.real();
  g_pools = 0;
  {
    Replaced<PFN_vkCreateSemaphore> sem(vk::vkCreateSemaphore, &fail_semaphore);
    EXPECT_THROW(Stream stream(dev(), 0, 0), Error);
  }
  EXPECT_EQ(g_pools, 0);
  {
    Stream works(dev(), 0, 0);
  }  // and a stream made normally is destroyed whole
  EXPECT_EQ(g_pools, 0);
}

TEST_F(VkOwnedTest, PipelinesWhoseCacheFailsDestroyTheirLayout) {
  Replaced<PFN_vkCreatePipelineLayout> cl(vk::vkCreatePipelineLayout, &count_create_layout);
  Replaced<PFN_vkDestroyPipelineLayout> dl(vk::vkDestroyPipelineLayout, &count_destroy_layout);
  real_create_layout = cl.real();
  real_destroy_layout = dl.real();
  g_layouts = 0;
  {
    Replaced<PFN_vkCreatePipelineCache> cache(vk::vkCreatePipelineCache, &fail_cache);
    EXPECT_THROW(Pipelines pipelines(dev()), Error);
  }
  EXPECT_EQ(g_layouts, 0);
}

TEST_F(VkOwnedTest, MovesHandOverOwnership) {
  VkDevice d = dev().handle();
  VkOwned<VkSemaphore> a(d);
  VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  ASSERT_EQ(vk::vkCreateSemaphore(d, &si, nullptr, a.put()), VK_SUCCESS);
  VkSemaphore h = a.get();
  VkOwned<VkSemaphore> b(std::move(a));
  EXPECT_FALSE(a);
  EXPECT_EQ(b.get(), h);
  VkOwned<VkSemaphore> c;
  c = std::move(b);
  EXPECT_EQ(c.get(), h);
  VkSemaphore released = c.release();
  EXPECT_FALSE(c);
  vk::vkDestroySemaphore(d, released, nullptr);
}

}  // namespace
}  // namespace vkml::test
