// The Python module torch_vkml._C: device queries, memory statistics,
// synchronisation, device-clock events, the fallback counters and validation messages.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/version.h>

#include <cstdlib>
#include <string>

#include "allocator.h"
#include "fallback.h"
#include "generator.h"
#include "linalg_blocked.h"
#include "sync_debug.h"
#include "vkml/ops/attention.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/fft.h"
#include "vkml/ops/gemm_bf16x3.h"
#include "vkml/ops/gemm_coopmat.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/shader_registry.h"
#include "vkml_tensor.h"

namespace vkml_aten {
void register_hooks();
void register_event(pybind11::module& m);
void register_module_conversion(pybind11::module& m);
void register_profiler(pybind11::module& m);
void register_distributed(pybind11::module& m);
}  // namespace vkml_aten

namespace py = pybind11;
using namespace vkml_aten;

namespace {

int resolve(std::optional<int> index) { return index.value_or(current_device()); }

vkml::Device& dev(std::optional<int> index) { return device_at(c10::DeviceIndex(resolve(index))); }

// `details`: also what `python -m torch_vkml doctor` shows (the keys beyond DeviceProperties).
py::dict properties(int index, bool details) {
  const vkml::DeviceInfo& i =
      guarded([&]() -> const vkml::DeviceInfo& { return vkml::Runtime::get().info(index); });
  py::dict d;
  d["name"] = i.name;
  d["vendor"] = i.vendor;
  d["vendor_id"] = i.vendor_id;
  d["device_id"] = i.device_id;
  d["device_type"] = i.device_type;
  d["driver"] = i.driver_name + (i.driver_info.empty() ? "" : " " + i.driver_info);
  d["api_version"] = std::to_string(VK_API_VERSION_MAJOR(i.api_version)) + "." +
                     std::to_string(VK_API_VERSION_MINOR(i.api_version)) + "." +
                     std::to_string(VK_API_VERSION_PATCH(i.api_version));
  d["total_memory"] = i.total_memory;
  d["subgroup_size"] = i.subgroup_size;
  d["max_storage_buffer_range"] = i.max_storage_buffer_range;
  d["max_allocation_size"] = i.max_allocation_size;
  d["supports_fp16"] = i.supports_fp16;
  d["supports_fp64"] = i.supports_fp64;
  d["supports_int64"] = i.supports_int64;
  d["supports_int64_atomics"] = i.supports_int64_atomics;
  d["supports_int16"] = i.supports_int16;
  auto shape = [](uint32_t m, uint32_t n, uint32_t k) {
    return m == 0 ? std::string()
                  : std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  };
  d["cooperative_matrix"] = shape(i.coopmat_m, i.coopmat_n, i.coopmat_k);
  d["cooperative_matrix_bf16"] = shape(i.coopmat_bf16_m, i.coopmat_bf16_n, i.coopmat_bf16_k);
  d["pipeline_statistics"] = i.pipeline_statistics;
  d["calibrated_timestamps"] = i.calibrated_timestamps;
  d["loop_iteration_limit"] = i.loop_iteration_limit;
  d["queue_count"] = i.queues;
  d["copies_by_kernel"] = i.copies_by_kernel;
  if (!details) return d;
  d["driver_name"] = i.driver_name;
  d["driver_info"] = i.driver_info;
  // driverVersion's encoding is the vendor's: NVIDIA packs 10.8.8.6 bits, Intel's Windows
  // driver 18.14, everyone else VK_MAKE_API_VERSION's.
  const uint32_t v = i.driver_version;
  std::string version;
  if (i.vendor_id == 0x10DE) {
    version = std::to_string(v >> 22) + "." + std::to_string((v >> 14) & 0xff) + "." +
              std::to_string((v >> 6) & 0xff) + "." + std::to_string(v & 0x3f);
  } else {
#ifdef _WIN32
    if (i.vendor_id == 0x8086) version = std::to_string(v >> 14) + "." + std::to_string(v & 0x3fff);
#endif
    if (version.empty())
      version = std::to_string(VK_API_VERSION_MAJOR(v)) + "." +
                std::to_string(VK_API_VERSION_MINOR(v)) + "." +
                std::to_string(VK_API_VERSION_PATCH(v));
  }
  d["driver_version"] = version;
  py::list heaps;
  for (const auto& h : i.heaps) {
    py::dict hd;
    hd["size"] = h.size;
    hd["device_local"] = h.device_local;
    hd["budget"] = h.budget;
    hd["usage"] = h.usage;
    heaps.append(hd);
  }
  d["heaps"] = heaps;
  d["supports_memory_budget"] = i.supports_memory_budget;
  d["subgroup_size_control"] = i.subgroup_size_control;
  d["min_subgroup_size"] = i.min_subgroup_size;
  d["max_subgroup_size"] = i.max_subgroup_size;
  d["max_workgroup_invocations"] = i.max_workgroup_invocations;
  d["max_shared_memory"] = i.max_shared_memory;
  d["timestamp_period_ns"] = i.timestamp_period_ns;
  return d;
}

// torch.cuda.memory_stats()'s keys ("allocated_bytes.all.current", "num_ooms", ...),
// then vkml's own counters of the stream's work.
py::dict memory_stats(std::optional<int> index) {
  const c10::CachingDeviceAllocator::DeviceStats s =
      guarded([&] { return vkml_aten::device_stats(dev(index)); });
  py::dict d;
  auto put = [&](const std::string& key, const c10::CachingAllocator::Stat& stat) {
    d[(key + ".current").c_str()] = stat.current;
    d[(key + ".peak").c_str()] = stat.peak;
    d[(key + ".allocated").c_str()] = stat.allocated;
    d[(key + ".freed").c_str()] = stat.freed;
  };
  auto add = [&](const char* name, const c10::CachingDeviceAllocator::StatArray& a) {
    static const char* const kPools[] = {"all", "small_pool", "large_pool"};
    for (size_t p = 0; p < a.size(); ++p) put(std::string(name) + "." + kPools[p], a[p]);
  };
  add("allocation", s.allocation);
  add("segment", s.segment);
  add("active", s.active);
  add("inactive_split", s.inactive_split);
  add("allocated_bytes", s.allocated_bytes);
  add("reserved_bytes", s.reserved_bytes);
  add("active_bytes", s.active_bytes);
  add("inactive_split_bytes", s.inactive_split_bytes);
  add("requested_bytes", s.requested_bytes);
  put("oversize_allocations", s.oversize_allocations);
  put("oversize_segments", s.oversize_segments);
  d["max_split_size"] = s.max_split_size;
  d["num_sync_all_streams"] = s.num_sync_all_streams;
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_ooms"] = s.num_ooms;
  d["num_device_alloc"] = s.num_device_alloc;
  d["num_device_free"] = s.num_device_free;
  uint64_t dispatches = 0, submits = 0, barriers = 0, syncs = 0;
  for (vkml::Stream* st : dev(index).streams()) {  // every stream of the device
    dispatches += st->dispatch_count();
    submits += st->submit_count();
    barriers += st->barrier_count();
    syncs += st->sync_count();
  }
  d["num_dispatches"] = dispatches;
  d["num_submits"] = submits;
  d["num_barriers"] = barriers;
  d["num_syncs"] = syncs;
  return d;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch-vkml native module";
  register_hooks();
  register_event(m);
  register_module_conversion(m);
  register_distributed(m);
  m.def("is_available", [] { return vkml::Runtime::get().available(); });
  m.def("unavailable_reason", [] { return vkml::Runtime::get().unavailable_reason(); });
  m.def("device_count", [] { return vkml::Runtime::get().device_count(); });
  m.def("in_bad_fork", [] { return vkml::Runtime::in_bad_fork(); });
  // Whether a vkml device has been created (torch.cuda.is_initialized's meaning); creates
  // nothing.
  m.def("is_initialized", [] {
    vkml::Runtime* rt = vkml::Runtime::existing();
    if (!rt || vkml::Runtime::in_bad_fork()) return false;
    for (int i = 0; i < rt->device_count(); ++i)
      if (rt->created_device(i)) return true;
    return false;
  });
  m.def("check_index", [](int i) { guarded([&] { vkml::Runtime::get().check_index(i); }); });
  m.def("get_device_properties", &properties, py::arg("index"), py::arg("details") = false);
  // The torch release whose headers this module was compiled against.
  m.attr("built_for_torch") = std::to_string(TORCH_VERSION_MAJOR) + "." +
                              std::to_string(TORCH_VERSION_MINOR) + "." +
                              std::to_string(TORCH_VERSION_PATCH);
  m.def("current_device", [] { return int(current_device()); });
  m.def("set_device", [](int i) {
    guarded([&] { vkml::Runtime::get().check_index(i); });
    set_current_device(c10::DeviceIndex(i));
  });
  m.def(
      "synchronize",
      [](std::optional<int> i) {
        py::gil_scoped_release no_gil;
        guarded([&] { dev(i).synchronize(); });
      },
      py::arg("device") = py::none());
  m.def("set_sync_debug_mode", [](int mode) {
    TORCH_CHECK(mode >= 0 && mode <= 2, "invalid value of debug_mode, expected 0, 1 or 2");
    set_sync_debug_mode(SyncDebugMode(mode));
  });
  m.def("get_sync_debug_mode", [] { return int(sync_debug_mode()); });
  m.def("memory_stats", &memory_stats, py::arg("device") = py::none());
  // torch.profiler's vkml kernels and torch_vkml.profile (profiler.cpp).
  register_profiler(m);
  m.def(
      "reset_peak_memory_stats", [](std::optional<int> i) { dev(i).memory().reset_peak(); },
      py::arg("device") = py::none());
  m.def(
      "reset_accumulated_memory_stats",
      [](std::optional<int> i) { dev(i).memory().reset_accumulated(); },
      py::arg("device") = py::none());
  m.def(
      "set_memory_fraction",
      [](double fraction, std::optional<int> i) {
        guarded([&] { dev(i).memory().set_memory_fraction(fraction); });
      },
      py::arg("fraction"), py::arg("device") = py::none());
  m.def(
      "get_memory_fraction", [](std::optional<int> i) { return dev(i).memory().memory_fraction(); },
      py::arg("device") = py::none());
  m.def(
      "mem_get_info",
      [](std::optional<int> i) {
        vkml::MemoryPool::HeapInfo h = guarded([&] { return dev(i).memory().heap_info(); });
        return std::make_pair(h.free, h.total);
      },
      py::arg("device") = py::none());
  m.def("empty_cache", [] {
    py::gil_scoped_release no_gil;
    // In a forked child this raises the fork error, as every use of the device does.
    if (vkml::Runtime::in_bad_fork()) guarded([] { vkml::Runtime::get().device(0); });
    vkml_aten::empty_device_caches();
  });
  // VkFFT's plan cache (vkml/ops/fft.h), for torch_vkml.fft_plan_cache.
  m.def("_fft_available", [] { return vkml::ops::fft_available(); });
  m.def("_fft_plan_cache_info", [](std::optional<int> i) {
    auto info = guarded([&] { return vkml::ops::fft_plan_cache_info(dev(i)); });
    return std::make_pair(info.size, info.max_size);
  });
  m.def("_fft_plan_cache_set_max_size", [](std::optional<int> i, int64_t n) {
    py::gil_scoped_release no_gil;
    guarded([&] { vkml::ops::fft_plan_cache_set_max_size(dev(i), n); });
  });
  m.def("_fft_plan_cache_clear", [](std::optional<int> i) {
    py::gil_scoped_release no_gil;
    guarded([&] { vkml::ops::fft_plan_cache_clear(dev(i)); });
  });
  m.def(
      "coopmat_status",
      [](std::optional<int> i, const std::string& dtype) {
        if (dtype != "float16" && dtype != "bfloat16")
          throw py::value_error("coopmat_status: dtype must be 'float16' or 'bfloat16', not '" +
                                dtype + "'");
        const vkml::DType d = dtype == "bfloat16" ? vkml::DType::bf16 : vkml::DType::f16;
        py::gil_scoped_release no_gil;
        return std::string(guarded([&] { return vkml::ops::coopmat_status(dev(i), d); }));
      },
      py::arg("device") = py::none(), py::arg("dtype") = "float16");
  // The sweep knobs of ops/attention.h, ops/gemm_coopmat.h and ops/matmul.h (the scalar
  // kernel's tile, 0 for the default choice), for scripts/gpu_gemm_sweep.py.
  m.def("_set_attention_tiling",
        [](int tiling) { guarded([&] { vkml::ops::set_attention_tiling(tiling); }); });
  m.def(
      "_set_coopmat_tuning",
      [](int bk, int tile, int warps) {
        guarded([&] { vkml::ops::set_coopmat_tuning({bk, tile, warps}); });
      },
      py::arg("bk"), py::arg("tile"), py::arg("warps") = 0);
  m.def("_set_gemm_tile", [](int tile) { vkml::ops::set_gemm_tile(tile); });
  m.def("_set_gpu_choices", [](bool on) { vkml::ops::set_gpu_choices(on); });
  // Linear algebra by blocks past `order`, `block` columns wide (0: the default width);
  // returns the previous pair. Tests run many blocks on small matrices with it.
  m.def("_set_linalg_blocking", [](int64_t order, int64_t block) {
    const vkml_aten::linalg::Blocking old = vkml_aten::linalg::blocking();
    vkml_aten::linalg::set_blocking({order, block});
    return py::make_tuple(old.order, old.block);
  });
  // Holds a vkml stream busy (its later submissions wait on the GPU) until released:
  // tests of the ordering between streams and of record_stream's hold on memory.
  m.def("_hold_stream", [](c10::Stream s, bool hold) {
    guarded([&] {
      vkml::Stream& st = vkml_aten::stream_of(s);
      hold ? st.hold() : st.release_hold();
    });
  });
  m.def("_set_gemm_config", [](int bm, int bn, int bk, int threads, int tn) {
    guarded([&] { vkml::ops::set_gemm_config(bm, bn, bk, threads, tn); });
  });
  // {"shader[constants]": {statistic: value}} of every pipeline made on the device, as
  // its driver's compiler reports them (TORCH_VKML_PIPELINE_STATS=1; for the sweeps).
  m.def(
      "_pipeline_statistics",
      [](std::optional<int> i) {
        auto all = guarded([&] { return dev(i).pipelines().statistics(); });
        py::dict out;
        for (const auto& [name, stats] : all) {
          py::dict d;
          for (const auto& s : stats) d[py::str(s.name)] = s.value;
          out[py::str(name)] = d;
        }
        return out;
      },
      py::arg("device") = py::none());
  // TORCH_VKML_FP32_ON_BF16 at run time (vkml/ops/gemm_bf16x3.h says why it is off).
  m.def("_set_fp32_on_bf16_units", [](bool on) { vkml::ops::set_fp32_on_bf16_units(on); });
  // TORCH_VKML_COOPMAT's modes at run time ("0", "1", "fp16", "emulate"), so that tests
  // reach the matrix-unit kernels' emulated variants in process.
  m.def("_set_coopmat_mode", [](const std::string& mode) {
    using vkml::ops::CoopmatMode;
    const CoopmatMode m =
        mode == "0"         ? CoopmatMode::kOff
        : mode == "1"       ? CoopmatMode::kAuto
        : mode == "fp16"    ? CoopmatMode::kFp16Only
        : mode == "emulate" ? CoopmatMode::kEmulated
                            : throw py::value_error("coopmat mode: '0', '1', 'fp16' or 'emulate'");
    vkml::ops::set_coopmat_mode(m);
  });
  m.def("_coopmat_mode", [] {
    static const char* const kNames[] = {"0", "1", "emulate", "fp16"};  // CoopmatMode's order
    return std::string(kNames[int(vkml::ops::coopmat_mode())]);
  });
  m.def("_coopmat_tuning", [] {
    const vkml::ops::CoopmatTuning t = vkml::ops::coopmat_tuning();
    return py::make_tuple(t.bk, t.tile, t.warps);
  });
  m.def("fallback_counts", [] { return fallback_counts(); });
  m.def("reset_fallback_counts", [] { reset_fallback_counts(); });
  m.def("has_shader", [](const std::string& name) { return vkml::find_shader(name) != nullptr; });
  m.def("validation_enabled", [] { return vkml::Runtime::get().validation_enabled(); });
  m.def("validation_messages", [] { return vkml::Runtime::get().take_validation_messages(); });
  m.def(
      "default_generator",
      [](int i) {
        return py::reinterpret_steal<py::object>(
            THPGenerator_initDefaultGenerator(default_generator(c10::DeviceIndex(i))));
      },
      py::arg("device"));
  // Called at interpreter exit: the runtime is never destroyed, so this is where
  // the pipelines compiled in this process reach the on-disk cache.
  m.def("save_pipeline_cache", [] {
    vkml::Runtime* rt = vkml::Runtime::existing();  // a process that never used vkml: nothing
    if (!rt) return;
    for (int i = 0; i < rt->device_count(); ++i)
      if (vkml::Device* d = rt->created_device(i)) {
        d->pipelines().stop_prewarm();
        d->pipelines().save_cache();
      }
  });
}
