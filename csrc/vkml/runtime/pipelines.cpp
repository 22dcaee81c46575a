#include "vkml/runtime/pipelines.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <vector>

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"

namespace vkml {

size_t Pipelines::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<const void*>()(k.shader);
  for (uint32_t i = 0; i < k.spec.count; ++i)
    h = h * 1000003u ^ std::hash<int32_t>()(k.spec.values[i]);
  return h;
}

Pipelines::Pipelines(Device& device) : device_(device) {
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  VKML_CHECK_VK(vk::vkCreatePipelineLayout(device.handle(), &li, nullptr, &layout_));

  std::vector<char> initial;
  std::string path = cache_path();
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (in) initial.assign(std::istreambuf_iterator<char>(in), {});
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = initial.size();
  ci.pInitialData = initial.empty() ? nullptr : initial.data();
  // A stale or foreign cache file is ignored by the driver; retry empty if it errors.
  if (vk::vkCreatePipelineCache(device.handle(), &ci, nullptr, &cache_) != VK_SUCCESS) {
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    VKML_CHECK_VK(vk::vkCreatePipelineCache(device.handle(), &ci, nullptr, &cache_));
  }
}

Pipelines::~Pipelines() {
  save_cache();
  VkDevice dev = device_.handle();
  for (auto& [k, p] : pipelines_) vk::vkDestroyPipeline(dev, p, nullptr);
  for (auto& [s, m] : modules_) vk::vkDestroyShaderModule(dev, m, nullptr);
  vk::vkDestroyPipelineCache(dev, cache_, nullptr);
  vk::vkDestroyPipelineLayout(dev, layout_, nullptr);
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

size_t Pipelines::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

VkPipeline Pipelines::get(std::string_view shader_name, const SpecConstants& spec) {
  const ShaderBlob* blob = find_shader(shader_name);
  if (!blob) fail(ErrorKind::Internal, "vkml: no shader named " + std::string(shader_name));
  return get(blob, spec);
}

VkPipeline Pipelines::get(const ShaderBlob* blob, const SpecConstants& spec) {
  if (!blob) fail(ErrorKind::Internal, "vkml: kernel not built into this binary");
  std::lock_guard<std::mutex> lock(mutex_);
  Key key{blob, spec};
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return it->second;

  VkDevice dev = device_.handle();
  VkShaderModule& module = modules_[blob];
  if (!module) {
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = blob->bytes;
    mi.pCode = blob->code;
    VKML_CHECK_VK(vk::vkCreateShaderModule(dev, &mi, nullptr, &module));
  }
  VkSpecializationMapEntry entries[4];
  for (uint32_t i = 0; i < spec.count; ++i)
    entries[i] = {i, uint32_t(i * sizeof(int32_t)), sizeof(int32_t)};
  VkSpecializationInfo si{spec.count, entries, spec.count * sizeof(int32_t), spec.values.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = spec.count ? &si : nullptr;
  ci.layout = layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VKML_CHECK_VK(vk::vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &pipeline));
  pipelines_.emplace(key, pipeline);
  ++created_since_save_;
  return pipeline;
}

void Pipelines::save_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!created_since_save_) return;
  std::string path = cache_path();
  if (path.empty()) return;
  size_t n = 0;
  if (vk::vkGetPipelineCacheData(device_.handle(), cache_, &n, nullptr) != VK_SUCCESS || !n) return;
  std::vector<char> data(n);
  if (vk::vkGetPipelineCacheData(device_.handle(), cache_, &n, data.data()) != VK_SUCCESS) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out.write(data.data(), std::streamsize(n));
  }
  std::filesystem::rename(tmp, path, ec);
  created_since_save_ = 0;
}

}  // namespace vkml
