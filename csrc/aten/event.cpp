// torch_vkml._C._Event: a device-clock timestamp on a device's stream, the native half of
// torch_vkml.Event (which mirrors torch.cuda.Event).
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include "vkml_tensor.h"

namespace py = pybind11;

namespace vkml_aten {
namespace {

class Event {
 public:
  explicit Event(int device)
      : device_(guarded([&]() -> int {
          vkml::Runtime::get().check_index(device);
          return device;
        })),
        slot_(guarded([&] { return timer().acquire(); })) {}
  ~Event() {
    try {
      timer().release(slot_);
    } catch (...) {
    }
  }
  Event(const Event&) = delete;

  void record() {
    py::gil_scoped_release no_gil;
    guarded([&] { timer().record(slot_); });
    recorded_ = true;
  }
  bool query() {
    if (!recorded_) return true;  // as torch.cuda.Event: nothing to wait for
    return guarded([&] { return timer().ready(slot_); });
  }
  void synchronize() {
    if (!recorded_) return;
    py::gil_scoped_release no_gil;
    guarded([&] { timer().ticks(slot_); });
  }
  double elapsed_ns(const Event& end) {
    TORCH_CHECK(recorded_ && end.recorded_,
                "Both events must be recorded before calculating elapsed time.");
    TORCH_CHECK(device_ == end.device_, "Both events must be on the same vkml device.");
    py::gil_scoped_release no_gil;
    return guarded([&] { return timer().elapsed_ns(slot_, end.slot_); });
  }
  int device() const { return device_; }

 private:
  vkml::Timer& timer() const { return device_at(c10::DeviceIndex(device_)).timer(); }

  int device_;
  uint32_t slot_;
  bool recorded_ = false;
};

}  // namespace

void register_event(py::module& m) {
  py::class_<Event>(m, "_Event")
      .def(py::init<int>(), py::arg("device"))
      .def("record", &Event::record)
      .def("query", &Event::query)
      .def("synchronize", &Event::synchronize)
      .def("elapsed_ns", &Event::elapsed_ns, py::arg("end"))
      .def_property_readonly("device", &Event::device);
  m.def("timestamp_period_ns", [](int device) {
    return guarded([&] { return device_at(c10::DeviceIndex(device)).timer().period_ns(); });
  });
}

}  // namespace vkml_aten
