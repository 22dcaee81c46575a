#include "vkml/runtime/memory.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "vkml/runtime/deferred.h"

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"

namespace vkml {

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kSmallRequest = 1 * kMiB;  // requests up to this share 2 MiB blocks
constexpr uint64_t kSmallBlock = 2 * kMiB;
constexpr uint64_t kMediumRequest = 10 * kMiB;  // up to this share 20 MiB blocks
constexpr uint64_t kMediumBlock = 20 * kMiB;
constexpr uint64_t kLargeRound = 2 * kMiB;

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// In MiB as CUDA's messages give sizes, in KiB below one (a small request read "0.00 MiB").
std::string mib(uint64_t bytes) {
  char buf[64];
  if (bytes < kMiB)
    snprintf(buf, sizeof(buf), "%.2f KiB", double(bytes) / 1024.0);
  else
    snprintf(buf, sizeof(buf), "%.2f MiB", double(bytes) / double(kMiB));
  return buf;
}
}  // namespace

// Staging memory is only ever freed once the host saw the GPU finish with it, so any
// stream may reuse it: one set of blocks for all.
MemoryPool::MemoryPool(Device& device, bool host_visible)
    : device_(device), per_stream_(!host_visible) {
  VkPhysicalDeviceMemoryProperties mem;
  vk::vkGetPhysicalDeviceMemoryProperties(device.physical(), &mem);
  // Host pools prefer cached memory (fast reads back); device pools prefer
  // device-local memory that is not host-visible (the real VRAM on dGPUs).
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    int score = -1;
    if (host_visible) {
      if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT))
        score = 1 + ((f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 2 : 0);
    } else if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) {
      score = 1 + ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) ? 0 : 1);
    }
    if (score > best_score) best = int(i), best_score = score;
  }
  if (best < 0) fail(ErrorKind::Unavailable, "no suitable Vulkan memory type on this device");
  memory_type_ = uint32_t(best);
  heap_index_ = mem.memoryTypes[best].heapIndex;
  constexpr VkMemoryPropertyFlags kHostUsable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  const VkMemoryPropertyFlags flags = mem.memoryTypes[best].propertyFlags;
  mapped_ = host_visible || (flags & kHostUsable) == kHostUsable;
}

MemoryPool::~MemoryPool() {
  for (auto& [addr, b] : blocks_) destroy_block(b);
  for (Chunk* c : spare_chunks_) delete c;
}

MemoryPool::Chunk* MemoryPool::new_chunk(const Chunk& value) {
  if (spare_chunks_.empty()) return new Chunk(value);
  Chunk* c = spare_chunks_.back();
  spare_chunks_.pop_back();
  *c = value;
  return c;
}

void MemoryPool::drop_chunk(Chunk* c) { spare_chunks_.push_back(c); }

void MemoryPool::add_free(Chunk* c) {
  FreeSet& pool = c->block->small ? free_small_ : free_large_;
  if (spare_free_nodes_.empty()) {
    pool.insert(c);
    return;
  }
  FreeSet::node_type node = std::move(spare_free_nodes_.back());
  spare_free_nodes_.pop_back();
  node.value() = c;
  pool.insert(std::move(node));
}

void MemoryPool::remove_free(Chunk* c) {
  FreeSet& pool = c->block->small ? free_small_ : free_large_;
  FreeSet::node_type node = pool.extract(c);
  if (node) spare_free_nodes_.push_back(std::move(node));
}

void MemoryPool::add_live(uint64_t address, Chunk* c) {
  if (spare_live_nodes_.empty()) {
    live_[address] = c;
    return;
  }
  LiveMap::node_type node = std::move(spare_live_nodes_.back());
  spare_live_nodes_.pop_back();
  node.key() = address;
  node.mapped() = c;
  live_.insert(std::move(node));
}

uint64_t MemoryPool::heap_size() const { return device_.info().heaps[heap_index_].size; }

uint64_t MemoryPool::reserve_limit() const {
  return fraction_ >= 1.0 ? heap_size() : uint64_t(double(heap_size()) * fraction_);
}

void MemoryPool::set_memory_fraction(double fraction) {
  VKML_CHECK_ARG(fraction >= 0.0 && fraction <= 1.0, "memory fraction must be within [0, 1]");
  std::lock_guard<std::mutex> lock(mutex_);
  fraction_ = fraction;
}

double MemoryPool::memory_fraction() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fraction_;
}

MemoryPool::HeapInfo MemoryPool::heap_info() const {
  const uint64_t total = heap_size();
  if (device_.info().supports_memory_budget) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    props.pNext = &budget;
    vk::vkGetPhysicalDeviceMemoryProperties2(device_.physical(), &props);
    const uint64_t b = budget.heapBudget[heap_index_], used = budget.heapUsage[heap_index_];
    return {std::min(b > used ? b - used : 0, total), total};
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto reserved = uint64_t(stats_.reserved_bytes[kAllPools].current);
  return {total > reserved ? total - reserved : 0, total};
}

MemoryPool::Block* MemoryPool::create_block(uint64_t size, bool small, int stream) {
  last_block_result_ = VK_SUCCESS;
  // Stay within the heap: drivers may over-commit and fail later, which is worse; and
  // within the process's share of it.
  if (uint64_t(stats_.reserved_bytes[kAllPools].current) + size > reserve_limit()) return nullptr;
  if (device_.info().max_allocation_size && size > device_.info().max_allocation_size)
    return nullptr;
  VkDevice dev = device_.handle();
  // Owned from creation: a failed allocation, bind or map below leaks nothing.
  auto b = std::make_unique<Block>();
  b->size = size;
  b->small = small;
  b->stream = stream;
  b->buffer = VkOwned<VkBuffer>(dev);
  b->memory = VkOwned<VkDeviceMemory>(dev);
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  last_block_result_ = vk::vkCreateBuffer(dev, &bi, nullptr, b->buffer.put());
  if (last_block_result_ != VK_SUCCESS) return nullptr;
  VkMemoryRequirements req;
  vk::vkGetBufferMemoryRequirements(dev, b->buffer.get(), &req);
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &flags;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memory_type_;
  if (!(req.memoryTypeBits & (1u << memory_type_))) return nullptr;
  last_block_result_ = vk::vkAllocateMemory(dev, &ai, nullptr, b->memory.put());
  if (last_block_result_ != VK_SUCCESS) return nullptr;
  VKML_CHECK_VK(vk::vkBindBufferMemory(dev, b->buffer.get(), b->memory.get(), 0));
  if (mapped_) {
    void* p = nullptr;
    VKML_CHECK_VK(vk::vkMapMemory(dev, b->memory.get(), 0, VK_WHOLE_SIZE, 0, &p));
    b->mapped = static_cast<char*>(p);
  }
  VkBufferDeviceAddressInfo addr{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  addr.buffer = b->buffer.get();
  b->address = vk::vkGetBufferDeviceAddress(dev, &addr);
  // New memory may take a freed block's addresses, not its contents.
  device_.value_bounds().forget(Span{b->address, b->address + size});
  b->first = new_chunk(Chunk{b.get(), 0, size, 0, true, 0, nullptr, nullptr});
  blocks_[b->address] = b.get();
  count(stats_.reserved_bytes, b.get(), int64_t(size));
  count(stats_.segments, b.get(), 1);
  return b.release();
}

void MemoryPool::destroy_block(Block* b) {
  // Its buffer and memory destroy themselves (freeing the memory unmaps it).
  for (Chunk* c = b->first; c;) {
    Chunk* next = c->next;
    drop_chunk(c);
    c = next;
  }
  delete b;
}

MemoryPool::Chunk* MemoryPool::take_free_chunk(uint64_t size, bool small, int stream) {
  auto& pool = small ? free_small_ : free_large_;
  Block probe_block;
  probe_block.address = 0;
  probe_block.stream = stream;
  Chunk probe{&probe_block, 0, size, 0, true, 0, nullptr, nullptr};
  auto it = pool.lower_bound(&probe);
  if (it == pool.end() || (*it)->block->stream != stream) return nullptr;
  Chunk* c = *it;
  // A huge free chunk serving a much smaller request would pin a whole block.
  if (!small && c->size > size + kMediumBlock && size > kMediumRequest && c->size > 2 * size)
    return nullptr;
  spare_free_nodes_.push_back(pool.extract(it));
  return c;
}

MemoryPool::Chunk* MemoryPool::split(Chunk* c, uint64_t size) {
  uint64_t rest = c->size - size;
  uint64_t min_rest = c->block->small ? kAlignment : kSmallRequest;
  if (rest < min_rest) return c;
  Chunk* tail = new_chunk(Chunk{c->block, c->offset + size, rest, 0, true, 0, c, c->next});
  if (c->next) c->next->prev = tail;
  c->next = tail;
  c->size = size;
  add_free(tail);
  return c;
}

Allocation MemoryPool::allocate(uint64_t nbytes) {
  uint64_t size = round_up(std::max<uint64_t>(nbytes, 1), kAlignment);
  bool small = size <= kSmallRequest;
  const int stream = per_stream_ ? current_stream_slot(device_.index()) : 0;
  if (freed_later_count_.load(std::memory_order_relaxed)) collect_freed_later();
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Chunk* c = take_free_chunk(size, small, stream);
      if (!c) {
        uint64_t block_size = small                    ? kSmallBlock
                              : size <= kMediumRequest ? kMediumBlock
                                                       : round_up(size, kLargeRound);
        Block* b = create_block(block_size, small, stream);
        if (b) c = b->first;
      }
      if (c) {
        c = split(c, size);
        c->free = false;
        uint64_t address = c->block->address + c->offset;
        add_live(address, c);
        c->requested = nbytes;
        count(stats_.allocated_bytes, c->block, int64_t(c->size));
        count(stats_.requested_bytes, c->block, int64_t(nbytes));
        count(stats_.allocations, c->block, 1);
        if (attempt == 1) stats_.alloc_retries++;
        return {address, c->size, c->block->mapped ? c->block->mapped + c->offset : nullptr};
      }
    }
    if (attempt == 0) device_.release_cached_memory();  // waits for the GPU, empties caches
  }
  uint64_t allocated = 0, reserved = 0;
  VkResult driver = VK_SUCCESS;
  double fraction = 1.0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.ooms++;
    allocated = uint64_t(stats_.allocated_bytes[kAllPools].current);
    reserved = uint64_t(stats_.reserved_bytes[kAllPools].current);
    driver = last_block_result_;
    fraction = fraction_;
  }
  uint64_t heap = heap_size();
  char fraction_text[32];
  std::snprintf(fraction_text, sizeof fraction_text, "%g", fraction);
  fail(
      ErrorKind::OutOfMemory,
      "vkml out of memory: tried to allocate " + mib(nbytes) + " on device " +
          std::to_string(device_.index()) + " (" + device_.info().name + "); " + mib(allocated) +
          " allocated by tensors, " + mib(reserved) + " reserved, heap size " + mib(heap) +
          ", free " + mib(heap > reserved ? heap - reserved : 0) +
          (device_.info().max_allocation_size
               ? ", largest single allocation " + mib(device_.info().max_allocation_size)
               : std::string()) +
          (fraction < 1.0 ? "; this process may reserve " + mib(uint64_t(double(heap) * fraction)) +
                                " (set_per_process_memory_fraction(" + fraction_text + "))"
                          : std::string()) +
          // The heap had room and the driver refused: other processes' memory, or for a
          // CPU driver (lavapipe: device memory is host memory) the host's; "free" above
          // does not see either.
          (driver != VK_SUCCESS
               ? std::string("; the driver refused it (") + vk_result_name(driver) +
                     ") with room left in the heap: memory other processes hold, or for a "
                     "CPU driver such as lavapipe the host's memory or a limit on it (ulimit "
                     "-v)"
               : std::string()));
}

void MemoryPool::free(uint64_t address) {
  record_deferred();
  uint64_t others = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(address);
    if (it == live_.end()) fail(ErrorKind::Internal, "vkml: free of an unknown address");
    others = it->second->other_streams;
    if (!others) return release_chunk(take_live(it));  // the usual case: one lock, one lookup
  }
  // Reused once the other streams have run what they recorded by now (submitted, so
  // that they get there without anyone else flushing them).
  FreedLater later{nullptr, {}};
  for (int slot = 0; slot < Device::kStreamSlots; ++slot)
    if (others >> slot & 1) later.waits.emplace_back(slot, device_.stream(slot).flush());
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(address);
  if (it == live_.end()) fail(ErrorKind::Internal, "vkml: free of an unknown address");
  later.chunk = take_live(it);
  freed_later_.push_back(std::move(later));
  freed_later_count_.store(freed_later_.size(), std::memory_order_relaxed);
}

void MemoryPool::record_stream(uint64_t address, int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(address);
  if (it == live_.end() || !per_stream_ || it->second->block->stream == slot) return;
  it->second->other_streams |= uint64_t(1) << slot;
}

void MemoryPool::collect_freed_later() {
  // The streams' progress is read without the pool's lock: a stream retiring work
  // frees into this pool under its own.
  std::array<uint64_t, Device::kStreamSlots> reached{};
  std::array<bool, Device::kStreamSlots> needed{};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const FreedLater& f : freed_later_)
      for (const auto& [slot, value] : f.waits) needed[size_t(slot)] = true;
  }
  for (int slot = 0; slot < Device::kStreamSlots; ++slot)
    if (needed[size_t(slot)]) reached[size_t(slot)] = device_.stream(slot).completed_value();
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(freed_later_, [&](const FreedLater& f) {
    for (const auto& [slot, value] : f.waits)
      if (reached[size_t(slot)] < value) return false;
    release_chunk(f.chunk);
    return true;
  });
  freed_later_count_.store(freed_later_.size(), std::memory_order_relaxed);
}

void MemoryPool::free_finished(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(address);
  if (it == live_.end()) fail(ErrorKind::Internal, "vkml: free of an unknown address");
  release_chunk(take_live(it));
}

MemoryPool::Chunk* MemoryPool::take_live(LiveMap::iterator it) {
  LiveMap::node_type node = live_.extract(it);
  Chunk* c = node.mapped();
  spare_live_nodes_.push_back(std::move(node));
  count(stats_.allocated_bytes, c->block, -int64_t(c->size));
  count(stats_.requested_bytes, c->block, -int64_t(c->requested));
  count(stats_.allocations, c->block, -1);
  return c;
}

void MemoryPool::release_chunk(Chunk* c) {
  c->requested = 0;
  c->other_streams = 0;
  c->free = true;
  if (c->prev && c->prev->free) {
    Chunk* p = c->prev;
    remove_free(p);
    p->size += c->size;
    p->next = c->next;
    if (c->next) c->next->prev = p;
    drop_chunk(c);
    c = p;
  }
  if (c->next && c->next->free) {
    Chunk* n = c->next;
    remove_free(n);
    c->size += n->size;
    c->next = n->next;
    if (n->next) n->next->prev = c;
    drop_chunk(n);
  }
  add_free(c);
}

BufferSlice MemoryPool::find(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) fail(ErrorKind::Internal, "vkml: address outside any block");
  --it;
  Block* b = it->second;
  if (address >= b->address + b->size) fail(ErrorKind::Internal, "vkml: address outside any block");
  uint64_t off = address - b->address;
  return {b->buffer.get(), off, b->mapped ? b->mapped + off : nullptr, b->memory.get()};
}

uint64_t MemoryPool::address_of_host(const void* p) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* c = static_cast<const char*>(p);
  for (const auto& [address, b] : blocks_) {
    if (!b->mapped || c < b->mapped || c >= b->mapped + b->size) continue;
    uint64_t off = uint64_t(c - b->mapped);
    // Only inside a live chunk: a freed one may be handed out again any time.
    for (Chunk* ch = b->first; ch; ch = ch->next)
      if (off >= ch->offset && off < ch->offset + ch->size) return ch->free ? 0 : address + off;
  }
  return 0;
}

MemoryStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void MemoryPool::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (MemoryStatArray* a : {&stats_.allocated_bytes, &stats_.requested_bytes,
                             &stats_.reserved_bytes, &stats_.allocations, &stats_.segments})
    for (MemoryStat& s : *a) s.peak = s.current;
}

void MemoryPool::reset_accumulated() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (MemoryStatArray* a : {&stats_.allocated_bytes, &stats_.requested_bytes,
                             &stats_.reserved_bytes, &stats_.allocations, &stats_.segments})
    for (MemoryStat& s : *a) s.allocated = s.freed = 0;
  stats_.alloc_retries = stats_.ooms = 0;
}

void MemoryPool::count(MemoryStatArray& stat, const Block* b, int64_t n) {
  for (size_t pool : {size_t(kAllPools), size_t(b->small ? kSmallPool : kLargePool)})
    n >= 0 ? stat[pool].add(n) : stat[pool].remove(-n);
}

void MemoryPool::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    Block* b = it->second;
    if (b->first->free && !b->first->next) {
      remove_free(b->first);
      count(stats_.reserved_bytes, b, -int64_t(b->size));
      count(stats_.segments, b, -1);
      destroy_block(b);
      it = blocks_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace vkml
