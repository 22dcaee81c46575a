#include "vkml/runtime/profiler.h"

#include <algorithm>
#include <map>

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"

namespace vkml {

uint64_t& profiler_tag() {
  thread_local uint64_t tag = 0;
  return tag;
}

Profiler::Profiler(Device& device) : device_(device), timer_(device.timer()) {
  VKML_CHECK_ARG(
      timer_.supported(),
      device.info().name + " has no timestamps on its compute queue: kernels cannot be timed");
}

Profiler::~Profiler() = default;  // the query pools destroy themselves

uint32_t Profiler::before(VkCommandBuffer cb, int stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (commands_.size() >= kMaxCommands) {
    ++dropped_;
    return 0;
  }
  uint32_t query = uint32_t(commands_.size()) * 2;
  if (query / kQueriesPerPool >= pools_.size()) {
    pools_.push_back(timer_.create_pool(kQueriesPerPool));
  }
  VkQueryPool pool = pools_[query / kQueriesPerPool].get();
  uint32_t q = query % kQueriesPerPool;
  vk::vkCmdResetQueryPool(cb, pool, q, 2);
  vk::vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, q);
  Command c{};
  c.stream = stream;
  commands_.push_back(c);
  return uint32_t(commands_.size());
}

void Profiler::after(VkCommandBuffer cb, uint32_t command, VkPipeline pipeline, uint64_t workgroups,
                     const char* label) {
  if (command == 0) return;  // past kMaxCommands
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t query = (command - 1) * 2 + 1;
  vk::vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                          pools_[query / kQueriesPerPool].get(), query % kQueriesPerPool);
  Command& c = commands_[command - 1];
  c.pipeline = pipeline;
  c.workgroups = workgroups;
  c.tag = profiler_tag();
  c.label = label;
}

std::vector<Profiler::Command> Profiler::commands() {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint32_t queries = uint32_t(commands_.size()) * 2;
  std::vector<uint64_t> ticks(queries);
  for (uint32_t first = 0; first < queries; first += kQueriesPerPool) {
    uint32_t count = std::min(kQueriesPerPool, queries - first);
    VKML_CHECK_VK(vk::vkGetQueryPoolResults(
        device_.handle(), pools_[first / kQueriesPerPool].get(), 0, count, count * sizeof(uint64_t),
        ticks.data() + first, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  }
  std::vector<Command> out = commands_;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].start_ticks = ticks[2 * i];
    out[i].end_ticks = ticks[2 * i + 1];
  }
  return out;
}

std::string Profiler::name_of(VkPipeline pipeline, const char* label) const {
  if (label) return label;
  return pipeline ? device_.pipelines().name_of(pipeline) : "copy";
}

std::vector<Profiler::Kernel> Profiler::collect() {
  const uint64_t mask = timer_.tick_mask();
  std::map<std::pair<VkPipeline, const char*>, Kernel> by_pipeline;
  for (const Command& c : commands()) {
    Kernel& k = by_pipeline[{c.pipeline, c.label}];
    double ns = double((c.end_ticks - c.start_ticks) & mask) * timer_.period_ns();
    ++k.calls;
    k.workgroups += c.workgroups;
    k.total_ns += ns;
    k.max_ns = std::max(k.max_ns, ns);
  }
  std::vector<Kernel> out;
  for (auto& [key, k] : by_pipeline) {
    k.name = name_of(key.first, key.second);
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(),
            [](const Kernel& a, const Kernel& b) { return a.total_ns > b.total_ns; });
  return out;
}

}  // namespace vkml
