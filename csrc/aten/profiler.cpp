// torch.profiler on vkml, and torch_vkml.profile: both are views of the same records,
// vkml::Profiler's device-clock timestamps around every command the stream records
// (runtime/profiler.h), mapped onto the host clock and tagged with the aten op that
// recorded each command.
//
// The mechanism, with torch 2.13: a Kineto child activity profiler. With
// ProfilerActivity.PrivateUse1 (ProfilerActivity.VKML once the backend is renamed),
// torch.profiler runs in its KINETO_PRIVATEUSE1 state and asks Kineto for the PrivateUse1
// activity types (CONCURRENT_KERNEL, GPU_MEMCPY, ...: kPrivateUse1Types in
// torch/csrc/profiler/kineto_shim.cpp). Kineto configures, starts and stops every
// registered child profiler's session with its own, and tells each session the
// correlation id of every op as it begins and ends (pushCorrelationId/popCorrelationId,
// on the op's thread): that id, set as the thread's vkml::profiler_tag(), tags the
// commands the op records. At the end, the session's activities get their CPU op
// (Kineto's getLinkedActivity), torch turns them into PrivateUse1 device events
// (deviceTypeFromActivity) and adds each one's time to its op: key_averages() shows
// "self_device_time_total" per op and per kernel, and export_chrome_trace() puts the
// kernels on the device's own track with the op's "External id".
//
// torch's own PrivateUse1ProfilerRegistry registers such a factory too, but its header
// includes <IActivityProfiler.h> from torch/include/kineto, a directory that neither
// torch.utils.cpp_extension nor this build puts on the include path; so the factory goes
// to libkineto::api().registerProfilerFactory() directly, which is what the registry
// does with it (at import here, rather than at the first KINETO_PRIVATEUSE1 session:
// the session answers only where device activities are asked for).
//
// Not the way to profile vkml, but served too: the legacy path
// (torch.autograd.profiler.profile(use_device="vkml") without use_kineto,
// KINETO_PRIVATEUSE1_FALLBACK) asks registerPrivateUse1Methods' stubs for a device event
// pair around each op (not the device guard's event hooks): one made-up "kernel" per op
// spanning whatever the device ran meanwhile, no kernel names, no trace track, and a
// submit per event.
#include <c10/util/ApproximateClock.h>
#include <kineto/libkineto.h>
#include <kineto/output_base.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/profiler/stubs/base.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "vkml/ops/elementwise.h"
#include "vkml/runtime/profiler.h"
#include "vkml_tensor.h"

namespace py = pybind11;

namespace vkml_aten {
// A trace argument's JSON text.
struct Json {
  std::string text;
};
}  // namespace vkml_aten

// GenericTraceActivity::addMetadata() formats its value with fmt, whose compiled part
// libtorch does not export; for already-formatted JSON it needs no formatting. Kineto's
// metadata map holds (text, quoted) pairs up to torch 2.13 and typed values (JSON text a
// RawJson) from torch 2.14, whose kineto added TypedMetadata.h.
template <>
void libkineto::GenericTraceActivity::addMetadata<vkml_aten::Json>(const std::string& key,
                                                                   const vkml_aten::Json& value) {
#if __has_include(<kineto/TypedMetadata.h>)
  metadataMap_.emplace(key, libkineto::RawJson{value.text});
#else
  metadataMap_.emplace(key, std::make_pair(value.text, false));
#endif
}

namespace vkml_aten {
namespace {

// Kineto's clock: system_clock nanoseconds since the epoch (torch's CPU ops use it too).
int64_t host_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// An elementwise kernel's name with its op spelled out: the op code is its first
// specialization constant ("elementwise_f32[200]" -> "elementwise_f32[200] add").
std::string with_op_name(const std::string& name) {
  if (name.rfind("elementwise", 0) != 0) return name;
  size_t open = name.find('[');
  if (open == std::string::npos) return name;
  const char* op = vkml::ops::op_code_name(std::atoi(name.c_str() + open + 1));
  return op ? name + " " + op : name;
}

std::string kernel_name(vkml::Device& dev, VkPipeline pipeline, const char* label) {
  if (label) return label;
  return pipeline ? with_op_name(dev.pipelines().name_of(pipeline)) : "copy";
}

// One timed command, on the host's clock.
struct Record {
  VkPipeline pipeline;  // null: a buffer copy, or a library's commands (label)
  uint64_t tag;         // the correlation id of the op that recorded it (0: none)
  uint64_t workgroups;
  int64_t start_ns, end_ns;
  const char* label;  // a library's kernels (VkFFT): their name
  int stream;         // the slot of the stream that ran it
  bool kernel() const { return pipeline || label; }
};

// A device's records, shared by everyone profiling it (a torch.profiler session, any
// number of torch_vkml.profile blocks, nested or not): a vkml::Profiler is attached to
// the stream while at least one is on. Each user holds a cursor into the log; when one
// starts or stops, what was timed so far moves into the log (a stream synchronize) and
// a fresh Profiler goes on for the others.
class Recorder {
 public:
  explicit Recorder(vkml::Device& dev) : dev_(dev) {}

  uint64_t start() {
    std::lock_guard<std::mutex> lock(mutex_);
    harvest();
    attach();
    const uint64_t cursor = base_ + log_.size();
    users_.insert(cursor);
    return cursor;
  }

  // What was recorded since `cursor` (the latest start's without one); that user is done.
  std::vector<Record> stop(std::optional<uint64_t> cursor) {
    std::lock_guard<std::mutex> lock(mutex_);
    VKML_CHECK_ARG(!users_.empty(), "vkml: the profiler was not started");
    const uint64_t from = cursor.value_or(*users_.rbegin());
    auto user = users_.find(from);
    VKML_CHECK_ARG(user != users_.end(),
                   "vkml: no profiling was started at " + std::to_string(from) + " on this device");
    harvest();
    users_.erase(user);
    std::vector<Record> out(log_.begin() + (from - base_), log_.end());
    // Keep what the others still need.
    const uint64_t keep = users_.empty() ? base_ + log_.size() : *users_.begin();
    log_.erase(log_.begin(), log_.begin() + (keep - base_));
    base_ = keep;
    if (!users_.empty()) {
      try {
        attach();
      } catch (const std::exception&) {
        // The others' later commands go untimed; this user still gets its records.
      }
    }
    return out;
  }

  uint64_t dropped() {
    std::lock_guard<std::mutex> lock(mutex_);
    return dropped_;
  }

 private:
  // Attaches a fresh Profiler and notes where the device clock stands on the host's.
  void attach() {
    auto profiler = std::make_unique<vkml::Profiler>(dev_);  // throws without timestamps
    dev_.attach_profiler(profiler.get());
    try {
      dev_.wait_idle();  // the queues are idle: a timestamp written now runs at once
      vkml::Timer& timer = dev_.timer();
      if (!calibrated(timer)) {
        // Device clock to host clock: a timestamp written on the idle queue lands between
        // the host's times around its submit and its wait; the middle is off by at most
        // half of that window, so the narrowest of a few tries is kept (tens of
        // microseconds). The tick period's drift over a profile is negligible.
        const uint32_t slot = timer.acquire();
        int64_t window = -1;
        for (int attempt = 0; attempt < 3; ++attempt) {
          const int64_t before = host_now_ns();
          timer.record(slot);
          const uint64_t ticks = timer.ticks(slot);
          const int64_t after = host_now_ns();
          if (window < 0 || after - before < window) {
            window = after - before;
            host0_ = before + window / 2;
            tick0_ = ticks;
          }
        }
        timer.release(slot);
      }
    } catch (...) {
      dev_.attach_profiler(nullptr);
      throw;
    }
    profiler_ = std::move(profiler);
  }

  // Device clock to host clock through VK_EXT_calibrated_timestamps, where the device
  // has it: a device tick count and CLOCK_MONOTONIC read together (within the driver's
  // stated deviation, typically under a microsecond), then CLOCK_MONOTONIC moved onto
  // Kineto's system clock by the two host clocks read back to back. Linux only: elsewhere
  // the host domain is another clock.
  bool calibrated(vkml::Timer& timer) {
#if defined(__linux__)
    vkml::Timer::Calibration c;
    if (!timer.calibrate(&c)) return false;
    timespec before{}, after{};
    clock_gettime(CLOCK_MONOTONIC, &before);
    const int64_t system = host_now_ns();
    clock_gettime(CLOCK_MONOTONIC, &after);
    auto ns = [](const timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; };
    const int64_t monotonic = (ns(before) + ns(after)) / 2;
    host0_ = int64_t(c.monotonic_ns) + (system - monotonic);
    tick0_ = c.ticks;
    return true;
#else
    (void)timer;
    return false;
#endif
  }

  // Detaches the Profiler, waits for its commands and logs them.
  void harvest() {
    if (!profiler_) return;
    std::unique_ptr<vkml::Profiler> done = std::move(profiler_);
    dev_.attach_profiler(nullptr);
    dev_.wait_idle();
    const uint64_t mask = dev_.timer().tick_mask();
    const double period = dev_.timer().period_ns();
    auto host_ns = [&](uint64_t ticks) {
      const uint64_t ahead = (ticks - tick0_) & mask;
      const double ns =
          ahead > mask / 2 ? -double((tick0_ - ticks) & mask) * period : double(ahead) * period;
      return host0_ + int64_t(std::llround(ns));
    };
    for (const vkml::Profiler::Command& c : done->commands())
      log_.push_back({c.pipeline, c.tag, c.workgroups, host_ns(c.start_ticks), host_ns(c.end_ticks),
                      c.label, c.stream});
    dropped_ += done->dropped();
  }

  vkml::Device& dev_;
  std::mutex mutex_;
  std::unique_ptr<vkml::Profiler> profiler_;
  int64_t host0_ = 0;  // host time of tick0_
  uint64_t tick0_ = 0;
  std::vector<Record> log_;
  uint64_t base_ = 0;              // the cursor of log_[0]
  std::multiset<uint64_t> users_;  // their cursors
  uint64_t dropped_ = 0;
};

Recorder& recorder(vkml::Device& dev) {
  static std::mutex mutex;
  // Never destroyed: a device's Profiler must not outlive it at exit.
  static auto* recorders = new std::map<vkml::Device*, std::unique_ptr<Recorder>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& r = (*recorders)[&dev];
  if (!r) r = std::make_unique<Recorder>(dev);
  return *r;
}

// ---- torch.profiler: the Kineto child profiler --------------------------------------

// This thread's ops under way, innermost last, while a session runs: the commands an op
// records carry the innermost one's id. A session's number tells a stack left over from
// an earlier session (one stopped while ops were under way) from its own.
struct OpStack {
  uint64_t session = 0;
  std::vector<uint64_t> ids;
};
OpStack& op_stack() {
  thread_local OpStack s;
  return s;
}

uint64_t next_session_number() {
  static std::atomic<uint64_t> n{0};
  return ++n;
}

class TraceSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit TraceSession(const std::set<libkineto::ActivityType>& types)
      : kernels_(types.count(libkineto::ActivityType::CONCURRENT_KERNEL) > 0),
        copies_(types.count(libkineto::ActivityType::GPU_MEMCPY) > 0),
        number_(next_session_number()) {}

  // A session started and never stopped (an aborted trace) lets go of the devices.
  ~TraceSession() override {
    if (stopped_) return;
    for (const Traced& t : traced_) {
      try {
        recorder(*t.device).stop(t.cursor);
      } catch (...) {
      }
    }
  }

  void start() override {
    status_ = libkineto::TraceStatus::RECORDING;
    // The devices in use, and the current one (created here if it was not yet).
    std::vector<vkml::Device*> devices;
    try {
      if (vkml::Runtime::in_bad_fork()) return;
      vkml::Runtime& runtime = vkml::Runtime::get();
      if (!runtime.available()) return;
      devices.push_back(&device_at(current_device()));
      for (int i = 0; i < runtime.device_count(); ++i) {
        vkml::Device* d = runtime.created_device(i);
        if (d && std::find(devices.begin(), devices.end(), d) == devices.end())
          devices.push_back(d);
      }
    } catch (const std::exception& e) {
      errors_.push_back(std::string("vkml: ") + e.what());
    }
    for (vkml::Device* d : devices) {
      try {
        traced_.push_back({d, recorder(*d).start(), {}});
      } catch (const std::exception& e) {
        errors_.push_back(std::string("vkml: ") + e.what());
      }
    }
  }

  void stop() override {
    if (stopped_) return;
    stopped_ = true;
    for (Traced& t : traced_) {
      try {
        Recorder& r = recorder(*t.device);
        const uint64_t dropped = r.dropped();
        t.records = r.stop(t.cursor);
        if (r.dropped() != dropped)
          errors_.push_back("vkml: " + std::to_string(r.dropped() - dropped) +
                            " commands past the profiler's limit of " +
                            std::to_string(vkml::Profiler::kMaxCommands) + " were not timed");
      } catch (const std::exception& e) {
        errors_.push_back(std::string("vkml: ") + e.what());
      }
    }
    op_stack() = OpStack{};
    vkml::profiler_tag() = 0;
    status_ = libkineto::TraceStatus::READY;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked,
                    int64_t start_time, int64_t end_time) override {
    if (!buffer_) {
      buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
      buffer_->span = libkineto::TraceSpan(start_time, end_time, "vkml");
      buffer_->gpuOpCount = 0;
      for (const Traced& t : traced_) add_activities(t, linked);
    }
    for (const auto& a : buffer_->activities) a->log(logger);
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    if (traced_.empty()) return nullptr;
    const vkml::Device& d = *traced_.front().device;
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{d.index(), kSortIndex + d.index(),
                              "vkml:" + std::to_string(d.index()) + " " + d.info().name,
                              "vkml " + std::to_string(d.index())});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    // A track per stream that ran something (its slot is the trace's thread id).
    for (const Traced& t : traced_) {
      std::set<int> streams{0};
      for (const Record& r : t.records) streams.insert(r.stream);
      for (int s : streams)
        out.push_back({s, s, t.device->index(), "vkml stream " + std::to_string(s)});
    }
    return out;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

  void pushCorrelationId(uint64_t id) override {
    OpStack& s = op_stack();
    if (s.session != number_) s = OpStack{number_, {}};
    s.ids.push_back(id);
    vkml::profiler_tag() = id;
  }

  void popCorrelationId() override {
    OpStack& s = op_stack();
    if (s.session == number_ && !s.ids.empty()) s.ids.pop_back();
    vkml::profiler_tag() = s.session == number_ && !s.ids.empty() ? s.ids.back() : 0;
  }

 private:
  // Device tracks after the host's in the trace viewer.
  static constexpr int64_t kSortIndex = 1 << 24;

  struct Traced {
    vkml::Device* device;
    uint64_t cursor;
    std::vector<Record> records;
  };

  void add_activities(const Traced& t, const libkineto::getLinkedActivityCallback& linked) {
    std::map<std::pair<VkPipeline, const char*>, std::string> names;
    for (const Record& r : t.records) {
      if (r.kernel() ? !kernels_ : !copies_) continue;
      auto name = names.find({r.pipeline, r.label});
      if (name == names.end())
        name = names
                   .emplace(std::pair{r.pipeline, r.label},
                            kernel_name(*t.device, r.pipeline, r.label))
                   .first;
      buffer_->emplace_activity(buffer_->span,
                                r.kernel() ? libkineto::ActivityType::CONCURRENT_KERNEL
                                           : libkineto::ActivityType::GPU_MEMCPY,
                                name->second);
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = r.start_ns;
      a.endTime = std::max(r.end_ns, r.start_ns);
      a.id = int32_t(r.tag);
      a.device = t.device->index();
      a.resource = r.stream;
      if (r.tag != 0 && linked) a.linked = linked(int32_t(r.tag));
      a.addMetadata("device", Json{std::to_string(t.device->index())});
      a.addMetadata("stream", Json{std::to_string(r.stream)});
      if (r.tag != 0) a.addMetadata("correlation", Json{std::to_string(r.tag)});
      if (r.pipeline) a.addMetadata("workgroups", Json{std::to_string(r.workgroups)});
      ++buffer_->gpuOpCount;
    }
  }

  const bool kernels_, copies_;
  const uint64_t number_;
  bool stopped_ = false;
  std::vector<Traced> traced_;
  std::vector<std::string> errors_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
};

class VkmlActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override {
    static const std::string kName = "vkml";
    return kName;
  }

  const std::set<libkineto::ActivityType>& availableActivities() const override {
    static const std::set<libkineto::ActivityType> kTypes{
        libkineto::ActivityType::CONCURRENT_KERNEL, libkineto::ActivityType::GPU_MEMCPY};
    return kTypes;
  }

  // A session only where device activities are asked for (not for CPU-only profiling).
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& types, const libkineto::Config&) override {
    if (!types.count(libkineto::ActivityType::CONCURRENT_KERNEL) &&
        !types.count(libkineto::ActivityType::GPU_MEMCPY))
      return nullptr;
    return std::make_unique<TraceSession>(types);
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t, int64_t, const std::set<libkineto::ActivityType>& types,
      const libkineto::Config& config) override {
    return configure(types, config);
  }
};

// ---- The legacy path: an event pair around each op --------------------------------

struct StubEvent {
  vkml::Device* device;
  uint32_t slot;  // its Timer slot
};

class LegacyStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex index = current_device();
    if (device) *device = index;
    guarded([&] {
      vkml::Device& d = device_at(index);
      const uint32_t slot = d.timer().acquire();
      *event = std::shared_ptr<void>(new StubEvent{&d, slot}, [](void* p) {
        auto* e = static_cast<StubEvent*>(p);
        e->device->timer().release(e->slot);
        delete e;
      });
      if (cpu_ns) *cpu_ns = c10::getTime();
      d.timer().record(slot);
    });
  }

  // Microseconds, as torch's CUDA stubs.
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* start,
                const torch::profiler::impl::ProfilerVoidEventStub* end) const override {
    auto* a = static_cast<const StubEvent*>(start->get());
    auto* b = static_cast<const StubEvent*>(end->get());
    TORCH_CHECK(a && b && a->device == b->device, "vkml: events of different devices");
    return guarded([&] { return float(a->device->timer().elapsed_ns(a->slot, b->slot) / 1e3); });
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    for (int i : created_devices()) op(i);
  }

  void synchronize() const override {
    for (int i : created_devices()) guarded([&] { device_at(c10::DeviceIndex(i)).synchronize(); });
  }

 private:
  static std::vector<int> created_devices() {
    std::vector<int> out;
    vkml::Runtime* runtime = vkml::Runtime::existing();
    if (!runtime || vkml::Runtime::in_bad_fork()) return out;
    for (int i = 0; i < runtime->device_count(); ++i)
      if (runtime->created_device(i)) out.push_back(i);
    return out;
  }
};

vkml::Device& device_or_current(std::optional<int> index) {
  return device_at(c10::DeviceIndex(index.value_or(current_device())));
}

}  // namespace

void register_profiler(py::module& m) {
  libkineto::api().registerProfilerFactory([] { return std::make_unique<VkmlActivityProfiler>(); });
  static LegacyStubs legacy_stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&legacy_stubs);

  // torch_vkml.profile: the same records, summed per kernel.
  m.def(
      "_profile_start",
      [](std::optional<int> i) {
        py::gil_scoped_release no_gil;
        return guarded([&] { return recorder(device_or_current(i)).start(); });
      },
      py::arg("device") = py::none());
  m.def(
      "_profile_stop",
      [](std::optional<int> i, std::optional<uint64_t> cursor) {
        struct Kernel {
          uint64_t calls = 0, workgroups = 0;
          double total_ns = 0, max_ns = 0;
        };
        std::vector<std::pair<std::string, Kernel>> kernels;
        {
          py::gil_scoped_release no_gil;
          guarded([&] {
            vkml::Device& d = device_or_current(i);
            std::map<std::pair<VkPipeline, const char*>, Kernel> by_pipeline;
            for (const Record& r : recorder(d).stop(cursor)) {
              Kernel& k = by_pipeline[{r.pipeline, r.label}];
              const double ns = double(r.end_ns - r.start_ns);
              ++k.calls;
              k.workgroups += r.workgroups;
              k.total_ns += ns;
              k.max_ns = std::max(k.max_ns, ns);
            }
            for (const auto& [key, k] : by_pipeline)
              kernels.emplace_back(kernel_name(d, key.first, key.second), k);
          });
        }
        std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
          return a.second.total_ns > b.second.total_ns;
        });
        py::list out;
        for (const auto& [name, k] : kernels)
          out.append(py::make_tuple(name, k.calls, k.workgroups, k.total_ns, k.max_ns));
        return out;
      },
      py::arg("device") = py::none(), py::arg("cursor") = py::none());
}

}  // namespace vkml_aten
