// Device guard: the current device and stream per thread, and the event hooks of
// torch.Event (event.h).
//
// Streams: id 0 is the default stream, 1..kPoolSize the pool (handed out round robin, as
// CUDA's), and torch.Stream() gets a fresh id above that, which runs on pool stream
// 1 + (id - 1) % kPoolSize. Each id's stream is a vkml::Stream of the device (its own
// command buffers and timeline, on a queue of its own where the device has several):
// work on two streams is ordered only by events and wait_stream, as on CUDA, and memory
// used on another stream than its allocation's waits for it once record_stream says so.
// Priorities are accepted and have no effect.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <atomic>
#include <vector>

#include "allocator.h"
#include "event.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
constexpr c10::StreamId kPoolSize = vkml::Device::kPoolStreams;

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

}  // namespace

int stream_slot(c10::StreamId id) { return id <= 0 ? 0 : int(1 + (id - 1) % kPoolSize); }

vkml::Stream& stream_of(const c10::Stream& s) {
  TORCH_CHECK(s.device_type() == kType, "expected a vkml stream, got one of ", s.device());
  return device_at(resolve(s.device())).stream(stream_slot(s.id()));
}

namespace {

// Work queued on a stream the thread leaves starts now, as CUDA kernels start when
// launched, not when the stream's batch fills or someone waits for it.
void submit_left(c10::DeviceIndex index, c10::StreamId left) noexcept {
  try {
    vkml::Runtime* rt = vkml::Runtime::existing();
    vkml::Device* d = rt && !vkml::Runtime::in_bad_fork() ? rt->created_device(index) : nullptr;
    if (d) d->stream(stream_slot(left)).flush();
  } catch (...) {
    // A lost device is reported by the next call that uses it.
  }
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
  // torch.accelerator.get_device_capability: the dtypes vkml tensors hold and convert
  // between (can_hold), on every device: float64 included, whose storage and
  // conversions need no shaderFloat64 (only its arithmetic does).
  c10::DeviceCapability getDeviceCapability(c10::Device d) const override {
    checked(d);
    c10::DeviceCapability cap;
#define VKML_HOLDS(_, name) \
  cap.capability_data.supported_scalar_types.has_##name = can_hold(c10::ScalarType::name);
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(VKML_HOLDS)
#undef VKML_HOLDS
    return cap;
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
    if (stream_slot(old) != stream_slot(s.id())) {
      // What vkml::Device::stream() records on from now on, on this thread.
      vkml::set_current_stream_slot(index, stream_slot(s.id()));
      submit_left(index, old);
    }
    return make_stream(index, old);
  }
  bool queryStream(const c10::Stream& s) const override {
    return guarded([&] {
      vkml::Stream& stream = stream_of(s);
      uint64_t queued = stream.flush();
      return stream.completed_value() >= queued;
    });
  }
  void synchronizeStream(const c10::Stream& s) const override {
    guarded([&] {
      stream_of(s).synchronize();
      device_at(resolve(s.device())).errors().raise_pending();
    });
  }
  void synchronizeDevice(const c10::DeviceIndex index) const override {
    guarded([&] { device_at(index).synchronize(); });
  }
  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& s) const override {
    vkml_allocator()->recordStream(data, s);
  }

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
