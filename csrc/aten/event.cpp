// vkml's events (event.h): what torch.Event and torch_vkml.Event record, query and time.
#include "event.h"

#include <pybind11/pybind11.h>
#include <torch/csrc/Event.h>
#include <torch/csrc/utils/pybind.h>

#include <memory>

#include "vkml_tensor.h"

namespace py = pybind11;

namespace vkml_aten {
namespace events {
namespace {

struct Event {
  c10::DeviceIndex device = -1;
  bool timed = false;
  uint32_t slot = 0;   // the timer slot of a timed event
  int stream = 0;      // the stream slot it was last recorded on
  uint64_t value = 0;  // that stream's timeline value once the point has passed
};

Event* as_event(void* p) { return static_cast<Event*>(p); }

c10::DeviceIndex index_of(const c10::Stream& s) {
  return s.device_index() < 0 ? current_device() : s.device_index();
}

}  // namespace

void record(void** event, const c10::Stream& stream, c10::DeviceIndex event_device,
            c10::EventFlag flag) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "expected a vkml stream, got one of ", stream.device());
  const c10::DeviceIndex index = index_of(stream);
  TORCH_CHECK(event_device < 0 || event_device == index, "Event device index ", int(event_device),
              " does not match recording stream's device index ", int(index), ".");
  guarded([&] {
    vkml::Device& dev = device_at(index);
    if (!*event) {
      auto e = std::make_unique<Event>();
      e->device = index;
      e->timed = flag == c10::EventFlag::BACKEND_DEFAULT;
      if (e->timed) e->slot = dev.timer().acquire();
      *event = e.release();
    }
    Event& e = *as_event(*event);
    vkml::Stream& on = stream_of(stream);
    // Both submit the open batch at once, so the event completes without a synchronize.
    e.value = e.timed ? dev.timer().record(e.slot, on) : on.flush();
    e.stream = on.slot();
  });
}

void block(void* event, const c10::Stream& stream) {
  const Event* e = as_event(event);
  if (!e || e->value == 0) return;
  guarded([&] {
    vkml::Stream& recorded = device_at(e->device).stream(e->stream);
    if (index_of(stream) == e->device) {
      // The waiting stream's later work starts after the event on the GPU.
      stream_of(stream).wait_for(recorded, e->value);
    } else {
      // Queues of two Vulkan devices cannot wait for each other: the host waits instead.
      recorded.wait(e->value);
    }
  });
}

bool query(void* event) {
  const Event* e = as_event(event);
  if (!e) return true;
  return guarded(
      [&] { return device_at(e->device).stream(e->stream).completed_value() >= e->value; });
}

void synchronize(void* event) {
  const Event* e = as_event(event);
  if (!e) return;
  guarded([&] { device_at(e->device).stream(e->stream).wait(e->value); });
}

double elapsed_ms(void* start, void* end) {
  const Event *s = as_event(start), *e = as_event(end);
  TORCH_CHECK_VALUE(s && e, "Both events must be recorded before calculating elapsed time.");
  TORCH_CHECK_VALUE(s->timed && e->timed,
                    "Both events must be created with argument 'enable_timing=True'.");
  TORCH_CHECK(s->device == e->device, "Both events must be recorded on the same vkml device, got ",
              int(s->device), " and ", int(e->device), ".");
  return guarded([&] { return device_at(s->device).timer().elapsed_ns(s->slot, e->slot); }) / 1e6;
}

void destroy(void* event) noexcept {
  Event* e = as_event(event);
  if (!e) return;
  if (e->timed) {
    try {
      device_at(e->device).timer().release(e->slot);
    } catch (...) {
    }
  }
  delete e;
}

}  // namespace events

void register_event(py::module& m) {
  // torch.Event.elapsed_time takes only an exact torch.Event as its argument; this takes
  // subclasses too (torch_vkml.Event).
  m.def("_event_elapsed_time", [](py::handle start, py::handle end) {
    TORCH_CHECK(THPEvent_Check(start.ptr()) && THPEvent_Check(end.ptr()),
                "expected two torch.Event objects");
    const c10::Event& a = reinterpret_cast<THPEvent*>(start.ptr())->event;
    return a.elapsedTime(reinterpret_cast<THPEvent*>(end.ptr())->event);
  });
  m.def("timestamp_period_ns", [](int device) {
    return guarded([&] { return device_at(c10::DeviceIndex(device)).timer().period_ns(); });
  });
}

}  // namespace vkml_aten
