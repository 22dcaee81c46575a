// Device guard: the current device per thread and the one stream per device.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

struct VkmlGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }

  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return {kType, current_device()}; }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "expected a vkml device, got ", d);
    if (d.index() >= 0) {
      guarded([&] { vkml::Runtime::get().check_index(d.index()); });
      set_current_device(d.index());
    }
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) set_current_device(d.index());
  }
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return c10::DeviceIndex(vkml::Runtime::get().device_count());
  }
  // One in-order queue per device: events and stream waits are trivially
  // satisfied by submission order.
  void record(void**, const c10::Stream&, const c10::DeviceIndex,
              const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream& s) const override {
    auto& dev = device_at(s.device_index());
    return dev.stream().completed_value() >= dev.stream().flush();
  }
  void synchronizeStream(const c10::Stream& s) const override {
    guarded([&] { device_at(s.device_index()).synchronize(); });
  }
  void synchronizeDevice(const c10::DeviceIndex index) const override {
    guarded([&] { device_at(index).synchronize(); });
  }
  void synchronizeEvent(void*) const override {}
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
};

}  // namespace
}  // namespace vkml_aten

C10_REGISTER_GUARD_IMPL(PrivateUse1, vkml_aten::VkmlGuardImpl);
