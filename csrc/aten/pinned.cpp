#include "pinned.h"

#include <c10/core/CPUAllocator.h>

#include <cstring>

#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

struct PinnedBlock {
  vkml::Device* device;
  uint64_t address;
};

void free_pinned(void* ctx) {
  auto* b = static_cast<PinnedBlock*>(ctx);
  if (!b) return;
  try {
    // Copies recorded from or into it, on any stream, may still be queued: free once
    // they ran.
    // In a forked child the parent's device is gone: leak (the child exits soon).
    if (vkml::Runtime::existing() && !vkml::Runtime::in_bad_fork())
      b->device->free_after_all_streams(b->device->staging(), b->address);
  } catch (...) {
    // Deleters must not throw; a failed free leaks the chunk.
  }
  delete b;
}

class PinnedAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    c10::Device cpu(c10::DeviceType::CPU);
    if (nbytes == 0) return {nullptr, nullptr, &free_pinned, cpu};
    vkml::Device& dev = device_at(current_device());
    auto a = guarded([&] { return dev.staging().allocate(nbytes); });
    return {a.host, new PinnedBlock{&dev, a.address}, &free_pinned, cpu};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedAllocator g_pinned;

}  // namespace

c10::Allocator* pinned_allocator() { return &g_pinned; }

bool is_pinned(const void* p) {
  vkml::Runtime* rt = vkml::Runtime::existing();
  if (!p || !rt) return false;
  for (int i = 0; i < rt->device_count(); ++i)
    if (vkml::Device* d = rt->created_device(i); d && d->staging().address_of_host(p)) return true;
  return false;
}

uint64_t pinned_address(vkml::Device& dev, const void* p) {
  return p ? dev.staging().address_of_host(p) : 0;
}

}  // namespace vkml_aten
