#pragma once
// Compute pipelines, created on first use and cached by (shader, specialization
// constants). Every pipeline shares one layout: no descriptor sets, 128 bytes of
// push constants (kernels receive buffer device addresses there).
//
// Creation runs outside the lock, so threads create different pipelines in
// parallel. The driver's VkPipelineCache is saved to disk together with the
// list of pipelines this process used; the next process recreates that list
// on background threads at start-up (TORCH_VKML_PREWARM; on by default except
// on CPU devices, where it would compete with the kernels for the same cores).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vkml/runtime/shader_registry.h"
#include "vkml/runtime/vk_api.h"
#include "vkml/runtime/vk_owned.h"

namespace vkml {

class Device;

// Up to eight int32 specialization constants, ids 0..7, and how the pipeline is
// made: a required subgroup size with full subgroups (0: the driver's choice;
// needs DeviceInfo::subgroup_size_control).
struct SpecConstants {
  std::array<int32_t, 12> values{};
  uint32_t count = 0;
  uint32_t subgroup_size = 0;
  SpecConstants() = default;
  SpecConstants(std::initializer_list<int32_t> v, uint32_t required_subgroup_size = 0)
      : subgroup_size(required_subgroup_size) {
    for (int32_t x : v)
      if (count < values.size()) values[count++] = x;
  }
  bool operator==(const SpecConstants&) const = default;
};

class Pipelines {
 public:
  explicit Pipelines(Device& device);
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;

  VkPipelineLayout layout() const { return layout_.get(); }
  // Throws (Internal) for Shader::none and for a variant this build has no blob of.
  VkPipeline get(Shader shader, const SpecConstants& spec = {});
  VkPipeline get(const ShaderBlob* shader, const SpecConstants& spec = {});
  size_t size() const;
  // "shader[constants]" of a pipeline this cache made ("?" for another); a scan, for
  // reports.
  std::string name_of(VkPipeline pipeline) const;
  // What the driver's compiler reports of each pipeline made so far (register count,
  // spills, ...: names and values are the driver's own), by name_of(); throws
  // (Unavailable) unless the device captures statistics (Device::captures_statistics).
  struct Statistic {
    std::string name;
    double value;
  };
  std::vector<std::pair<std::string, std::vector<Statistic>>> statistics() const;
  // Writes the driver's pipeline cache and the list of pipelines in use to disk
  // so the next process starts fast.
  void save_cache();
  // Creates these pipelines on `threads` background threads (unknown shader
  // names are skipped); wait_prewarm() joins them.
  void prewarm(std::vector<std::pair<std::string, SpecConstants>> keys, unsigned threads);
  void wait_prewarm();
  // Stops the warming threads early (at exit, before the driver unloads).
  void stop_prewarm() {
    stop_warming_ = true;
    wait_prewarm();
  }

  static constexpr uint32_t kPushConstantBytes = 128;

  // The table behind PipelineSlots: one entry per reserved slot, null until
  // that slot's pipeline is first made. Null for an index past the table.
  std::atomic<VkPipeline>* slot(uint32_t index) {
    return index < kSlotCapacity ? &slots_[index] : nullptr;
  }
  // Reserves `count` consecutive slot indices (the same on every device);
  // returns kSlotCapacity when the table is full (those sites go uncached).
  static uint32_t reserve_slots(uint32_t count);
  static constexpr uint32_t kSlotCapacity = 1u << 16;

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
  void log_compile(const char* shader, const SpecConstants& spec,
                   std::chrono::steady_clock::duration took);
  VkOwned<VkPipeline> create(const ShaderBlob* shader, const SpecConstants& spec);
  void save_manifest(const std::string& path);  // mutex held
  std::vector<std::pair<std::string, SpecConstants>> load_manifest(const std::string& path);

  Device& device_;
  // Owned handles: a constructor that throws half-way destroys what it made, and the
  // destructor needs no loops. Declared so that pipelines go before their modules,
  // cache and layout.
  VkOwned<VkPipelineLayout> layout_;
  VkOwned<VkPipelineCache> cache_;
  mutable std::mutex mutex_;
  std::unordered_map<const ShaderBlob*, VkOwned<VkShaderModule>> modules_;
  std::unordered_map<Key, VkOwned<VkPipeline>, KeyHash> pipelines_;
  size_t created_since_save_ = 0;
  std::unique_ptr<std::atomic<VkPipeline>[]> slots_;
  std::vector<std::thread> warmers_;
  std::atomic<bool> stop_warming_{false};
};

}  // namespace vkml
