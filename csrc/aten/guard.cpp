// Device guard: the current device and stream per thread, and the event hooks of
// torch.Event (event.h).
//
// Streams are serialized on one queue today: every vkml stream id names the device's one
// in-order queue (vkml::Stream). A c10 stream id only says which stream is current; work
// queued on any stream of a device runs in the order it was queued, so every order that
// events and stream waits ask for already holds and nothing can race. Id 0 is the default
// stream, 1..kPoolSize the pool (handed out round robin, as CUDA's), and torch.Stream()
// gets a fresh id above that. Priorities are accepted and have no effect.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <atomic>
#include <vector>

#include "event.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
constexpr c10::StreamId kPoolSize = 32;

std::atomic<c10::StreamId> g_next_pool{0};
std::atomic<c10::StreamId> g_next_new{kPoolSize + 1};

// This thread's current stream id per device index (absent: the default stream, 0).
thread_local std::vector<c10::StreamId> t_current_stream;

c10::DeviceIndex resolve(c10::Device d) {
  TORCH_CHECK(d.type() == kType, "expected a vkml device, got ", d);
  return d.index() < 0 ? current_device() : d.index();
}

c10::DeviceIndex checked(c10::Device d) {
  c10::DeviceIndex index = resolve(d);
  guarded([&] { vkml::Runtime::get().check_index(index); });
  return index;
}

c10::Stream make_stream(c10::DeviceIndex index, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, index), id);
}

struct VkmlGuardImpl final : public c10::impl::DeviceGuardImplInterface {
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
  c10::DeviceIndex deviceCount() const noexcept override {
    return c10::DeviceIndex(vkml::Runtime::get().device_count());
  }

  // ---- streams
  c10::Stream getStream(c10::Device d) const override {
    c10::DeviceIndex index = resolve(d);
    size_t i = size_t(index);
    return make_stream(index, i < t_current_stream.size() ? t_current_stream[i] : 0);
  }
  c10::Stream getDefaultStream(c10::Device d) const override { return make_stream(resolve(d), 0); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    return make_stream(checked(d), 1 + g_next_pool.fetch_add(1) % kPoolSize);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return make_stream(checked(d), g_next_new.fetch_add(1));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::DeviceIndex index = resolve(s.device());
    size_t i = size_t(index);
    if (i >= t_current_stream.size()) t_current_stream.resize(i + 1, 0);
    c10::StreamId old = t_current_stream[i];
    t_current_stream[i] = s.id();
    return make_stream(index, old);
  }
  // All of the queue's work, whichever stream queued it (one queue per device).
  bool queryStream(const c10::Stream& s) const override {
    return guarded([&] {
      vkml::Stream& stream = device_at(resolve(s.device())).stream();
      uint64_t queued = stream.flush();
      return stream.completed_value() >= queued;
    });
  }
  void synchronizeStream(const c10::Stream& s) const override {
    guarded([&] { device_at(resolve(s.device())).synchronize(); });
  }
  void synchronizeDevice(const c10::DeviceIndex index) const override {
    guarded([&] { device_at(index).synchronize(); });
  }
  // Nothing to track: a block freed on one stream and reused on another is ordered by
  // the one queue (and its hazard barriers) like any two dispatches.
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}

  // ---- events
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    events::record(event, stream, device_index, flag);
  }
  void block(void* event, const c10::Stream& stream) const override {
    events::block(event, stream);
  }
  bool queryEvent(void* event) const override { return events::query(event); }
  void synchronizeEvent(void* event) const override { events::synchronize(event); }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    return events::elapsed_ms(start, end);
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    events::destroy(event);
  }
};

}  // namespace
}  // namespace vkml_aten

C10_REGISTER_GUARD_IMPL(PrivateUse1, vkml_aten::VkmlGuardImpl);
