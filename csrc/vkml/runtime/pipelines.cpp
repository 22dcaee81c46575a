#include "vkml/runtime/pipelines.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/pipeline_cache_file.h"

namespace vkml {

size_t Pipelines::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<const void*>()(k.shader);
  for (uint32_t i = 0; i < k.spec.count; ++i)
    h = h * 1000003u ^ std::hash<int32_t>()(k.spec.values[i]);
  return h * 1000003u ^ k.spec.subgroup_size;
}

Pipelines::Pipelines(Device& device)
    : device_(device), slots_(new std::atomic<VkPipeline>[kSlotCapacity]()) {
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  layout_ = VkOwned<VkPipelineLayout>(device.handle());
  VKML_CHECK_VK(vk::vkCreatePipelineLayout(device.handle(), &li, nullptr, layout_.put()));

  std::string initial;
  std::string path = cache_path();
  if (!path.empty()) initial = pipeline_cache_file::read(path).value_or(std::string());
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = initial.size();
  ci.pInitialData = initial.empty() ? nullptr : initial.data();
  // A stale or foreign cache file is ignored by the driver; retry empty if it errors.
  cache_ = VkOwned<VkPipelineCache>(device.handle());
  if (vk::vkCreatePipelineCache(device.handle(), &ci, nullptr, cache_.put()) != VK_SUCCESS) {
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    VKML_CHECK_VK(vk::vkCreatePipelineCache(device.handle(), &ci, nullptr, cache_.put()));
  }
  const char* env = std::getenv("TORCH_VKML_PREWARM");
  bool warm = env ? std::string(env) != "0" : device.info().device_type != "cpu";
  if (warm && !path.empty()) {
    unsigned cores = std::thread::hardware_concurrency();
    prewarm(load_manifest(path + ".keys"), std::max(1u, std::min(4u, cores > 1 ? cores - 1 : 1)));
  }
}

Pipelines::~Pipelines() {
  stop_prewarm();
  save_cache();
  // The pipelines, modules, cache and layout destroy themselves, in that order.
}

std::string Pipelines::cache_path() const {
  if (const char* off = std::getenv("TORCH_VKML_PIPELINE_CACHE"); off && std::string(off) == "0")
    return {};
  std::string dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::string(home) + "/.cache";
  } else {
    return {};
  }
  const DeviceInfo& i = device_.info();
  char name[128];
  snprintf(name, sizeof(name), "/torch_vkml/pipelines-%04x-%04x.bin", i.vendor_id, i.device_id);
  return dir + name;
}

uint32_t Pipelines::reserve_slots(uint32_t count) {
  static std::atomic<uint32_t> next{0};
  uint32_t base = next.fetch_add(count);
  return base + uint64_t(count) <= kSlotCapacity ? base : kSlotCapacity;
}

size_t Pipelines::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

VkPipeline Pipelines::get(Shader shader, const SpecConstants& spec) {
  const ShaderBlob* blob = shader_blob(shader);
  if (!blob)
    fail(ErrorKind::Internal,
         std::string("vkml: shader ") + shader_name(shader) + " is not built into this binary");
  return get(blob, spec);
}

VkPipeline Pipelines::get(const ShaderBlob* blob, const SpecConstants& spec) {
  if (!blob) fail(ErrorKind::Internal, "vkml: kernel not built into this binary");
  Key key{blob, spec};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pipelines_.find(key);
    if (it != pipelines_.end()) return it->second.get();
  }
  VkOwned<VkPipeline> pipeline = create(blob, spec);
  std::lock_guard<std::mutex> lock(mutex_);
  // If another thread created the same pipeline meanwhile, ours is destroyed here.
  auto [it, inserted] = pipelines_.try_emplace(key, std::move(pipeline));
  if (inserted) ++created_since_save_;
  return it->second.get();
}

namespace {

std::string pipeline_name(const char* shader, const SpecConstants& spec) {
  std::string name = shader;
  name += '[';
  for (uint32_t i = 0; i < spec.count; ++i) {
    if (i) name += ',';
    name += std::to_string(spec.values[i]);
  }
  return name + ']';
}

double statistic_value(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      return s.value.b32 ? 1.0 : 0.0;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      return double(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      return double(s.value.u64);
    default:
      return s.value.f64;
  }
}

}  // namespace

std::string Pipelines::name_of(VkPipeline pipeline) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, p] : pipelines_)
    if (p.get() == pipeline) return pipeline_name(key.shader->name, key.spec);
  return "?";
}

std::vector<std::pair<std::string, std::vector<Pipelines::Statistic>>> Pipelines::statistics()
    const {
  if (!device_.captures_statistics())
    fail(ErrorKind::Unavailable,
         "vkml: pipeline statistics need TORCH_VKML_PIPELINE_STATS=1 before the device is "
         "first used, and a driver with VK_KHR_pipeline_executable_properties (" +
             device_.info().name + (device_.info().pipeline_statistics ? " has it)" : " has not)"));
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, std::vector<Statistic>>> out;
  for (const auto& [key, pipeline] : pipelines_) {
    std::vector<Statistic> stats;
    VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    pi.pipeline = pipeline.get();
    uint32_t executables = 0;
    VKML_CHECK_VK(
        vk::vkGetPipelineExecutablePropertiesKHR(device_.handle(), &pi, &executables, nullptr));
    for (uint32_t e = 0; e < executables; ++e) {  // one for a compute pipeline
      VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
      ei.pipeline = pipeline.get();
      ei.executableIndex = e;
      uint32_t n = 0;
      VKML_CHECK_VK(vk::vkGetPipelineExecutableStatisticsKHR(device_.handle(), &ei, &n, nullptr));
      std::vector<VkPipelineExecutableStatisticKHR> got(
          n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
      VKML_CHECK_VK(
          vk::vkGetPipelineExecutableStatisticsKHR(device_.handle(), &ei, &n, got.data()));
      for (uint32_t i = 0; i < n; ++i) stats.push_back({got[i].name, statistic_value(got[i])});
    }
    out.emplace_back(pipeline_name(key.shader->name, key.spec), std::move(stats));
  }
  return out;
}

VkOwned<VkPipeline> Pipelines::create(const ShaderBlob* blob, const SpecConstants& spec) {
  VkDevice dev = device_.handle();
  VkShaderModule module = VK_NULL_HANDLE;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    VkOwned<VkShaderModule>& slot = modules_[blob];
    if (!slot) {
      VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      mi.codeSize = blob->bytes;
      mi.pCode = blob->code;
      slot = VkOwned<VkShaderModule>(dev);
      VKML_CHECK_VK(vk::vkCreateShaderModule(dev, &mi, nullptr, slot.put()));
    }
    module = slot.get();
  }
  VkSpecializationMapEntry entries[std::tuple_size_v<decltype(spec.values)>];
  for (uint32_t i = 0; i < spec.count; ++i)
    entries[i] = {i, uint32_t(i * sizeof(int32_t)), sizeof(int32_t)};
  VkSpecializationInfo si{spec.count, entries, spec.count * sizeof(int32_t), spec.values.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = spec.count ? &si : nullptr;
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  if (spec.subgroup_size) {
    VKML_CHECK_ARG(device_.info().subgroup_size_control,
                   "vkml: " + device_.info().name + " cannot require a subgroup size");
    required.requiredSubgroupSize = spec.subgroup_size;
    ci.stage.pNext = &required;
    ci.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  }
  ci.layout = layout_.get();
  if (device_.captures_statistics()) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkOwned<VkPipeline> pipeline(dev);
  auto start = std::chrono::steady_clock::now();
  // The pipeline cache is internally synchronized: no lock around the compile.
  VKML_CHECK_VK(vk::vkCreateComputePipelines(dev, cache_.get(), 1, &ci, nullptr, pipeline.put()));
  log_compile(blob->name, spec, std::chrono::steady_clock::now() - start);
  return pipeline;
}

void Pipelines::log_compile(const char* shader, const SpecConstants& spec,
                            std::chrono::steady_clock::duration took) {
  // Drivers without a persistent cache (lavapipe) compile every pipeline in every
  // process, which is most of the test suite's time; this log says which ones cost.
  static const char* path = std::getenv("TORCH_VKML_PIPELINE_LOG");
  if (!path || !*path) return;
  double ms = std::chrono::duration<double, std::milli>(took).count();
  std::lock_guard<std::mutex> lock(mutex_);
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%.1f %s\n", ms, pipeline_name(shader, spec).c_str());
    std::fclose(f);
  }
}

void Pipelines::prewarm(std::vector<std::pair<std::string, SpecConstants>> keys, unsigned threads) {
  if (keys.empty() || threads == 0) return;
  auto shared =
      std::make_shared<std::vector<std::pair<std::string, SpecConstants>>>(std::move(keys));
  auto next = std::make_shared<std::atomic<size_t>>(0);
  for (unsigned t = 0; t < threads; ++t) {
    warmers_.emplace_back([this, shared, next] {
      for (size_t i = (*next)++; i < shared->size() && !stop_warming_; i = (*next)++) {
        const ShaderBlob* blob = find_shader((*shared)[i].first);
        if (!blob) continue;  // a kernel of an older build
        try {
          get(blob, (*shared)[i].second);
        } catch (const Error&) {
          // Warming is best effort: the op that needs it reports the error.
        }
      }
    });
  }
}

void Pipelines::wait_prewarm() {
  for (std::thread& t : warmers_) t.join();
  warmers_.clear();
}

void Pipelines::save_manifest(const std::string& path) {
  pipeline_cache_file::Keys keys;
  keys.reserve(pipelines_.size());
  for (const auto& [key, pipeline] : pipelines_) keys.emplace_back(key.shader->name, key.spec);
  pipeline_cache_file::write(path, pipeline_cache_file::format_keys(keys));
}

std::vector<std::pair<std::string, SpecConstants>> Pipelines::load_manifest(
    const std::string& path) {
  return pipeline_cache_file::parse_keys(pipeline_cache_file::read(path).value_or(std::string()));
}

void Pipelines::save_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!created_since_save_) return;
  std::string path = cache_path();
  if (path.empty()) return;
  size_t n = 0;
  if (vk::vkGetPipelineCacheData(device_.handle(), cache_.get(), &n, nullptr) != VK_SUCCESS || !n)
    return;
  std::string data(n, '\0');
  if (vk::vkGetPipelineCacheData(device_.handle(), cache_.get(), &n, data.data()) != VK_SUCCESS)
    return;
  data.resize(n);
  if (!pipeline_cache_file::write(path, data)) return;
  save_manifest(path + ".keys");
  created_since_save_ = 0;
}

}  // namespace vkml
