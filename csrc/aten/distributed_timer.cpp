// DDP's step timer for vkml (the reducer's forward, backward-compute and communication
// times in DDP's logging data), in device time from timed events, as CUDA's timer does.
// Without one DDP warns on every construction that it times only CPU and CUDA.
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <array>
#include <optional>

namespace vkml_aten {
namespace {

class VkmlTimer : public c10d::Timer {
 public:
  explicit VkmlTimer(c10::Device device) : device_(device) {}

  void record(Event event) override {
    c10d::Timer::record(event);  // the host time too, as the base timers keep it
    c10::DeviceGuard guard(device_);
    const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(device_.type());
    event_of(event).record(impl->getStream(device_));
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    c10::Event &a = event_of(start), &b = event_of(end);
    // Without backward (or under no_sync) some events were never recorded.
    if (!a.was_marked_for_recording() || !b.was_marked_for_recording()) return std::nullopt;
    c10::DeviceGuard guard(device_);
    a.synchronize();
    b.synchronize();
    const double ms = a.elapsedTime(b);
    if (ms < 0) return std::nullopt;
    return int64_t(ms * 1e6);
  }

 private:
  c10::Event& event_of(Event event) { return events_[size_t(event)]; }

  c10::Device device_;
  std::array<c10::Event, 5> events_{
      c10::Event(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT),
      c10::Event(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT),
      c10::Event(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT),
      c10::Event(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT),
      c10::Event(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT)};
};

}  // namespace
}  // namespace vkml_aten

namespace c10d {
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, vkml_aten::VkmlTimer)
}  // namespace c10d
