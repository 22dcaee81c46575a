// PrivateUse1 hooks: what autograd, torch.manual_seed and torch.accelerator
// ask of the device backend.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Storage.h>

#include "generator.h"
#include "pinned.h"
#include "vkml/ops/copy.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

struct VkmlHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return vkml::Runtime::get().available(); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return default_generator(index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return make_generator(index < 0 ? current_device() : index);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    // Device addresses of different devices may overlap; the current device
    // is the only honest answer without a lookup in every pool.
    return {c10::DeviceType::PrivateUse1, current_device()};
  }
  bool isPinnedPtr(const void* p) const override { return is_pinned(p); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override {
    return c10::DeviceIndex(vkml::Runtime::get().device_count());
  }
  void setCurrentDevice(c10::DeviceIndex d) const override {
    guarded([&] { vkml::Runtime::get().check_index(d); });
    set_current_device(d);
  }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = current_device();
    setCurrentDevice(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  // Storage resize (torch.load, set_, resize_ of a storage): new memory, old
  // bytes copied over.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    size_t old = impl->nbytes();
    c10::DataPtr fresh = impl->allocator()->allocate(newsize);
    size_t keep = std::min(old, newsize);
    if (keep && impl->data())
      guarded([&] {
        vkml::ops::copy_bytes(device_at(fresh.device().index()),
                              reinterpret_cast<uint64_t>(fresh.get()),
                              reinterpret_cast<uint64_t>(impl->data()), keep);
      });
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

VkmlHooks* g_hooks = nullptr;

}  // namespace

void register_hooks() {
  if (g_hooks) return;
  g_hooks = new VkmlHooks();
  at::RegisterPrivateUse1HooksInterface(g_hooks);
}

}  // namespace vkml_aten
