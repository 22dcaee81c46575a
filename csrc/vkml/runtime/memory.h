#pragma once
// The caching allocator: large Vulkan blocks, each one buffer with a device
// address, sub-allocated into chunks. Freed chunks go back to size-ordered
// free lists and are reused without any Vulkan call; adjacent free chunks merge.
// In the device pool each block belongs to the stream that was current when it was
// made and serves only that stream's allocations (as CUDA's caching allocator keeps
// its segments per stream): memory freed on a stream is reused in that stream's
// order at once, and a chunk that other streams used (record_stream) waits until
// they have passed the free.
// The bookkeeping recycles its chunk records and container nodes, so a
// steady-state loop of allocations and frees touches neither Vulkan nor the heap.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "vkml/runtime/vk_api.h"
#include "vkml/runtime/vk_owned.h"

namespace vkml {

class Device;

// One quantity of the allocator, counted as PyTorch's allocators count theirs (c10's
// DeviceStats): its current value, its peak since the last reset, and the totals
// added and removed since the last reset of the accumulated counts.
struct MemoryStat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;
  void add(int64_t n) {
    current += n;
    allocated += n;
    if (current > peak) peak = current;
  }
  void remove(int64_t n) {
    current -= n;
    freed += n;
  }
};

// Each quantity for all blocks, then for the small blocks (requests up to 1 MiB
// share 2 MiB blocks) and the large ones, the split c10's StatArray has.
enum MemoryStatPool : size_t { kAllPools = 0, kSmallPool = 1, kLargePool = 2 };
using MemoryStatArray = std::array<MemoryStat, 3>;

struct MemoryStats {
  MemoryStatArray allocated_bytes;  // in live chunks (requests rounded up)
  MemoryStatArray requested_bytes;  // what the live allocations asked for
  MemoryStatArray reserved_bytes;   // in Vulkan blocks
  MemoryStatArray allocations;      // live chunks
  MemoryStatArray segments;         // Vulkan blocks (vkAllocateMemory calls)
  int64_t alloc_retries = 0;        // allocations that had to empty the cache first
  int64_t ooms = 0;                 // allocations that failed after that
};

struct Allocation {
  uint64_t address = 0;  // device address of the first byte
  uint64_t size = 0;     // bytes reserved for it (rounded up)
  void* host = nullptr;  // mapped pointer, host-visible pools only
};

// A device address resolved to the buffer that holds it, for copy commands.
struct BufferSlice {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;
  void* host = nullptr;  // mapped pointer at that offset, host-visible pools only
  // The block's memory; `buffer` is bound to it at 0, so `offset` is also the memory
  // offset (for a library that binds buffers of its own to a chunk: VkFFT).
  VkDeviceMemory memory = VK_NULL_HANDLE;
};

class MemoryPool {
 public:
  MemoryPool(Device& device, bool host_visible);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;

  // Throws Error(OutOfMemory) after one retry that empties the cache.
  Allocation allocate(uint64_t nbytes);
  // Records this thread's held-back work first (runtime/deferred.h): freed memory
  // is reused at once, as the stream runs in order, unless record_stream named other
  // streams: then once they have run the work they had recorded by now.
  void free(uint64_t address);
  // The live allocation at `address` is used by the stream in `slot` too (PyTorch's
  // Tensor.record_stream): its free waits for that stream.
  void record_stream(uint64_t address, int slot);
  // Makes the chunks whose other streams have finished reusable (allocate() calls it;
  // after every stream is idle it frees them all).
  void collect_freed_later();
  // For the stream retiring finished work with its lock held: no held-back work
  // can use memory the GPU has finished with.
  void free_finished(uint64_t address);
  BufferSlice find(uint64_t address) const;
  // Whether every block is mapped, so find() gives host pointers: staging pools, and
  // device pools whose memory is also host-visible, coherent and cached (lavapipe, many
  // integrated GPUs), where the host may read and write device tensors in place.
  bool host_mapped() const { return mapped_; }
  // Host-visible pools: the device address of a mapped host pointer inside a
  // live allocation, or 0 when the pointer is not in this pool.
  uint64_t address_of_host(const void* p) const;

  MemoryStats stats() const;
  void reset_peak();
  void reset_accumulated();  // the allocated and freed totals, the retry and OOM counts
  // Bytes still free for this process in the pool's heap, and the heap's size. With
  // VK_EXT_memory_budget the driver's estimate (other processes' use included);
  // without, the heap less what this pool holds.
  struct HeapInfo {
    uint64_t free = 0;
    uint64_t total = 0;
  };
  HeapInfo heap_info() const;
  // The most this pool may reserve, as a fraction of its heap
  // (torch.cuda.set_per_process_memory_fraction's meaning): past it an allocation
  // empties the cache and retries, then raises the out-of-memory error. 1 by default.
  void set_memory_fraction(double fraction);
  double memory_fraction() const;
  // Returns the blocks that hold no live chunk to the driver. The caller makes
  // sure the GPU no longer uses freed memory (Device::empty_cache synchronizes).
  void empty_cache();

  static constexpr uint64_t kAlignment = 256;

 private:
  struct Block;
  struct Chunk {
    Block* block;
    uint64_t offset;
    uint64_t size;
    uint64_t requested;  // what the allocation asked for; 0 while free
    bool free;
    uint64_t other_streams;  // bit per stream slot that used it besides the block's
    Chunk* prev;
    Chunk* next;
  };
  struct Block {
    VkOwned<VkDeviceMemory> memory;  // declared first: the buffer goes before its memory
    VkOwned<VkBuffer> buffer;
    uint64_t address = 0;
    uint64_t size = 0;
    char* mapped = nullptr;
    bool small = false;
    int stream = 0;  // the slot whose allocations it serves (device pools)
    Chunk* first = nullptr;
  };
  struct BySize {
    bool operator()(const Chunk* a, const Chunk* b) const {
      if (a->block->stream != b->block->stream) return a->block->stream < b->block->stream;
      if (a->size != b->size) return a->size < b->size;
      return a->block->address + a->offset < b->block->address + b->offset;
    }
  };

  using FreeSet = std::set<Chunk*, BySize>;
  using LiveMap = std::unordered_map<uint64_t, Chunk*>;

  // Recycling of chunk records and nodes (mutex held).
  Chunk* new_chunk(const Chunk& value);
  void drop_chunk(Chunk* c);
  void add_free(Chunk* c);
  void remove_free(Chunk* c);
  void add_live(uint64_t address, Chunk* c);

  Chunk* take_free_chunk(uint64_t size, bool small, int stream);
  // nullptr when the driver is out of memory
  Block* create_block(uint64_t size, bool small, int stream);
  void release_chunk(Chunk* c);            // back to the free lists, merged with free neighbours
  Chunk* take_live(LiveMap::iterator it);  // out of live_, uncounted as allocated
  void destroy_block(Block* b);
  Chunk* split(Chunk* c, uint64_t size);
  uint64_t heap_size() const;
  uint64_t reserve_limit() const;  // heap_size() * fraction_
  // Adds `n` (negative: removes) to one quantity, for all pools and the block's own.
  void count(MemoryStatArray& stat, const Block* b, int64_t n);

  Device& device_;
  bool per_stream_ = false;  // blocks serve one stream each (the device pool)
  bool mapped_ = false;
  uint32_t memory_type_ = 0;
  uint32_t heap_index_ = 0;
  mutable std::mutex mutex_;
  FreeSet free_small_;
  FreeSet free_large_;
  LiveMap live_;
  std::vector<Chunk*> spare_chunks_;
  std::vector<FreeSet::node_type> spare_free_nodes_;
  std::vector<LiveMap::node_type> spare_live_nodes_;
  std::map<uint64_t, Block*> blocks_;  // by device address
  MemoryStats stats_;
  double fraction_ = 1.0;
  // What the driver answered when create_block last asked it for memory (VK_SUCCESS
  // where the heap or allocation limits refused first), for the out-of-memory message.
  VkResult last_block_result_ = VK_SUCCESS;
  // Chunks freed while other streams may still use them: each with the streams'
  // slots and the timeline values they must reach.
  struct FreedLater {
    Chunk* chunk;
    std::vector<std::pair<int, uint64_t>> waits;
  };
  std::vector<FreedLater> freed_later_;
  std::atomic<size_t> freed_later_count_{0};
};

}  // namespace vkml
