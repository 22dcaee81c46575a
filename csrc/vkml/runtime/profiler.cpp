#include "vkml/runtime/profiler.h"

#include <algorithm>
#include <map>

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"

namespace vkml {

Profiler::Profiler(Device& device) : device_(device) {
  uint32_t n = 0;
  vk::vkGetPhysicalDeviceQueueFamilyProperties(device.physical(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vk::vkGetPhysicalDeviceQueueFamilyProperties(device.physical(), &n, families.data());
  uint32_t bits =
      device.queue_family() < n ? families[device.queue_family()].timestampValidBits : 0;
  VKML_CHECK_ARG(bits != 0, device.info().name +
                                " has no timestamps on its compute queue: kernels cannot be timed");
  if (bits < 64) valid_mask_ = (uint64_t(1) << bits) - 1;
  if (device.info().timestamp_period_ns > 0) period_ns_ = device.info().timestamp_period_ns;
}

Profiler::~Profiler() {
  for (VkQueryPool p : pools_) vk::vkDestroyQueryPool(device_.handle(), p, nullptr);
}

void Profiler::before(VkCommandBuffer cb) {
  if (commands_.size() >= kMaxCommands) {
    ++dropped_;
    return;
  }
  uint32_t query = uint32_t(commands_.size()) * 2;
  if (query / kQueriesPerPool >= pools_.size()) {
    VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = kQueriesPerPool;
    VkQueryPool pool = VK_NULL_HANDLE;
    VKML_CHECK_VK(vk::vkCreateQueryPool(device_.handle(), &ci, nullptr, &pool));
    pools_.push_back(pool);
  }
  // Everything recorded before has finished before this command starts: its time
  // is its own.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vk::vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                           VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  VkQueryPool pool = pools_[query / kQueriesPerPool];
  uint32_t q = query % kQueriesPerPool;
  vk::vkCmdResetQueryPool(cb, pool, q, 2);
  vk::vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, q);
  open_ = true;
}

void Profiler::after(VkCommandBuffer cb, VkPipeline pipeline, uint64_t workgroups) {
  if (!open_) return;  // past kMaxCommands
  open_ = false;
  uint32_t query = uint32_t(commands_.size()) * 2 + 1;
  vk::vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pools_[query / kQueriesPerPool],
                          query % kQueriesPerPool);
  commands_.push_back({pipeline, workgroups});
}

std::vector<Profiler::Kernel> Profiler::collect() {
  const uint32_t queries = uint32_t(commands_.size()) * 2;
  std::vector<uint64_t> ticks(queries);
  for (uint32_t first = 0; first < queries; first += kQueriesPerPool) {
    uint32_t count = std::min(kQueriesPerPool, queries - first);
    VKML_CHECK_VK(vk::vkGetQueryPoolResults(
        device_.handle(), pools_[first / kQueriesPerPool], 0, count, count * sizeof(uint64_t),
        ticks.data() + first, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  }
  std::map<VkPipeline, Kernel> by_pipeline;
  for (size_t i = 0; i < commands_.size(); ++i) {
    const Command& c = commands_[i];
    Kernel& k = by_pipeline[c.pipeline];
    double ns = double((ticks[2 * i + 1] - ticks[2 * i]) & valid_mask_) * period_ns_;
    ++k.calls;
    k.workgroups += c.workgroups;
    k.total_ns += ns;
    k.max_ns = std::max(k.max_ns, ns);
  }
  std::vector<Kernel> out;
  for (auto& [pipeline, k] : by_pipeline) {
    k.name = pipeline ? device_.pipelines().name_of(pipeline) : "copy";
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(),
            [](const Kernel& a, const Kernel& b) { return a.total_ns > b.total_ns; });
  return out;
}

}  // namespace vkml
