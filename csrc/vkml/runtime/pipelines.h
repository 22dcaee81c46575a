#pragma once
// Compute pipelines, created on first use and cached by (shader, specialization
// constants). Every pipeline shares one layout: no descriptor sets, 128 bytes of
// push constants (kernels receive buffer device addresses there).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "vkml/runtime/shader_registry.h"
#include "vkml/runtime/vk_api.h"

namespace vkml {

class Device;

// Up to four int32 specialization constants, ids 0..3.
struct SpecConstants {
  std::array<int32_t, 4> values{};
  uint32_t count = 0;
  SpecConstants() = default;
  SpecConstants(std::initializer_list<int32_t> v) {
    for (int32_t x : v) values[count++] = x;
  }
  bool operator==(const SpecConstants&) const = default;
};

class Pipelines {
 public:
  explicit Pipelines(Device& device);
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;

  VkPipelineLayout layout() const { return layout_; }
  // Throws if no shader of that name was built.
  VkPipeline get(const ShaderBlob* shader, const SpecConstants& spec = {});
  VkPipeline get(std::string_view shader_name, const SpecConstants& spec = {});
  size_t size() const;
  // Writes the driver's pipeline cache to disk so the next process starts fast.
  void save_cache();

  static constexpr uint32_t kPushConstantBytes = 128;

 private:
  struct Key {
    const ShaderBlob* shader;
    SpecConstants spec;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::string cache_path() const;

  Device& device_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  mutable std::mutex mutex_;
  std::unordered_map<Key, VkPipeline, KeyHash> pipelines_;
  std::unordered_map<const ShaderBlob*, VkShaderModule> modules_;
  size_t created_since_save_ = 0;
};

// A shader looked up once by name; ops keep one per kernel as a function-local static.
inline const ShaderBlob* shader(std::string_view name) { return find_shader(name); }

}  // namespace vkml
