// The c10::DeviceAllocator of the vkml device. A tensor's data pointer is the
// Vulkan buffer device address of its first byte, as CUDA pointers are device
// pointers: kernels receive it unchanged. As a DeviceAllocator it answers
// torch.accelerator's memory calls (memory_allocated, memory_stats, empty_cache,
// get_memory_info, ...) from the core's caching allocator (runtime/memory.h).
#include "allocator.h"

#include <c10/core/CPUAllocator.h>

#include <array>

#include "vkml/ops/copy.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

constexpr int kMaxDevices = 16;

template <int D>
void free_on(void* ptr) {
  // A forked child inherits the parent's tensors but not its device: leak them.
  if (!ptr || vkml::Runtime::in_bad_fork()) return;
  try {
    vkml::Runtime::get().device(D).memory().free(reinterpret_cast<uint64_t>(ptr));
  } catch (...) {
    // Deleters must not throw; a failed free leaks the chunk.
  }
}

template <size_t... I>
constexpr std::array<c10::DeleterFnPtr, sizeof...(I)> make_deleters(std::index_sequence<I...>) {
  return {&free_on<int(I)>...};
}
constexpr auto kDeleters = make_deleters(std::make_index_sequence<kMaxDevices>());

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingDeviceAllocator::StatArray;

void copy_stat(StatArray& to, const vkml::MemoryStatArray& from) {
  for (size_t i = 0; i < from.size(); ++i) {
    to[i].current = from[i].current;
    to[i].peak = from[i].peak;
    to[i].allocated = from[i].allocated;
    to[i].freed = from[i].freed;
  }
}

// The device of an index from PyTorch (-1: the current one), created if need be:
// asking for its memory initialises it, as on CUDA.
vkml::Device& stats_device(c10::DeviceIndex index) {
  return device_at(index < 0 ? current_device() : index);
}

class VkmlAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    c10::DeviceIndex index = current_device();
    c10::Device device(c10::DeviceType::PrivateUse1, index);
    vkml::Device& dev = device_at(index);
    TORCH_CHECK(index < kMaxDevices, "vkml supports up to ", kMaxDevices, " devices");
    if (nbytes == 0) return {nullptr, nullptr, kDeleters[index], device};
    auto a = guarded([&] { return dev.memory().allocate(nbytes); });
    void* p = reinterpret_cast<void*>(a.address);
    return {p, p, kDeleters[index], device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    guarded([&] {
      vkml::ops::copy_bytes(device_at(current_device()), reinterpret_cast<uint64_t>(dest),
                            reinterpret_cast<uint64_t>(src), count);
    });
  }

  // Whether a device exists to ask: torch.accelerator's memory calls return zeros
  // before that, as CUDA's do before its first use.
  bool initialized() override {
    vkml::Runtime* rt = vkml::Runtime::existing();
    return rt && rt->available() && !vkml::Runtime::in_bad_fork();
  }

  void emptyCache(c10::MempoolId_t) override { empty_device_caches(); }

  // Tensor.record_stream: the memory's free waits for `stream`'s work recorded by then.
  void recordStream(const c10::DataPtr& data, c10::Stream stream) override {
    if (!data.get() || data.device().type() != c10::DeviceType::PrivateUse1) return;
    guarded([&] {
      device_at(data.device().index())
          .memory()
          .record_stream(reinterpret_cast<uint64_t>(data.get()), stream_slot(stream.id()));
    });
  }

  DeviceStats getDeviceStats(c10::DeviceIndex index) override {
    return guarded([&] { return device_stats(stats_device(index)); });
  }

  void resetAccumulatedStats(c10::DeviceIndex index) override {
    guarded([&] { stats_device(index).memory().reset_accumulated(); });
  }

  void resetPeakStats(c10::DeviceIndex index) override {
    guarded([&] { stats_device(index).memory().reset_peak(); });
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex index) override {
    vkml::MemoryPool::HeapInfo h =
        guarded([&] { return stats_device(index).memory().heap_info(); });
    return {size_t(h.free), size_t(h.total)};
  }
};

VkmlAllocator g_allocator;

}  // namespace

c10::DeviceAllocator* vkml_allocator() { return &g_allocator; }

void empty_device_caches() {
  vkml::Runtime* rt = vkml::Runtime::existing();
  if (!rt || vkml::Runtime::in_bad_fork()) return;
  for (int i = 0; i < rt->device_count(); ++i)
    if (vkml::Device* d = rt->created_device(i)) guarded([&] { d->release_cached_memory(); });
}

DeviceStats device_stats(vkml::Device& dev) {
  const vkml::MemoryStats s = dev.memory().stats();
  DeviceStats d;
  copy_stat(d.allocation, s.allocations);
  copy_stat(d.segment, s.segments);
  copy_stat(d.active, s.allocations);  // freed memory is reusable at once: active == allocated
  copy_stat(d.allocated_bytes, s.allocated_bytes);
  copy_stat(d.reserved_bytes, s.reserved_bytes);
  copy_stat(d.active_bytes, s.allocated_bytes);
  copy_stat(d.requested_bytes, s.requested_bytes);
  d.num_alloc_retries = s.alloc_retries;
  d.num_ooms = s.ooms;
  d.num_device_alloc = s.segments[vkml::kAllPools].allocated;
  d.num_device_free = s.segments[vkml::kAllPools].freed;
  return d;
}

}  // namespace vkml_aten

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &vkml_aten::g_allocator);
