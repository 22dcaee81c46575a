// The c10::Allocator of the vkml device. A tensor's data pointer is the
// Vulkan buffer device address of its first byte, as CUDA pointers are device
// pointers: kernels receive it unchanged.
#include <c10/core/Allocator.h>
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

class VkmlAllocator final : public c10::Allocator {
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
};

VkmlAllocator g_allocator;

}  // namespace

c10::Allocator* vkml_allocator() { return &g_allocator; }

}  // namespace vkml_aten

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &vkml_aten::g_allocator);
