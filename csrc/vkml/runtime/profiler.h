#pragma once
// Per-kernel device time (torch_vkml.profile): while a Profiler is attached, the
// stream puts its barrier before every command (not only where the hazard tracker
// sees a dependency) and the Profiler device-clock timestamps on both sides of it, so
// each kernel's time is its own, measured alone, as a CUDA stream runs kernels one
// after another. Serialising costs the overlap the hazard tracker normally allows; the
// per-kernel breakdown is the point, not the total.
#include <cstdint>
#include <string>
#include <vector>

#include "vkml/runtime/vk_api.h"
#include "vkml/runtime/vk_owned.h"

namespace vkml {

class Device;
class Timer;

class Profiler {
 public:
  // Throws InvalidArgument where the compute queue has no timestamps.
  explicit Profiler(Device& device);
  ~Profiler();
  Profiler(const Profiler&) = delete;

  // Called by the stream, its lock held, around each command it records into cb;
  // `pipeline` is null for a buffer copy. Commands past kMaxCommands are run but not
  // timed (counted in dropped()).
  void before(VkCommandBuffer cb);
  void after(VkCommandBuffer cb, VkPipeline pipeline, uint64_t workgroups);

  struct Kernel {
    std::string name;  // shader[specialization constants], or "copy"
    uint64_t calls = 0;
    uint64_t workgroups = 0;
    double total_ns = 0, max_ns = 0;
  };
  // The time of every command recorded, summed per kernel, most time first. The
  // caller has waited for the stream to finish them.
  std::vector<Kernel> collect();
  uint64_t dropped() const { return dropped_; }

  static constexpr uint32_t kMaxCommands = 1u << 18;

 private:
  struct Command {
    VkPipeline pipeline;
    uint64_t workgroups;
  };
  static constexpr uint32_t kQueriesPerPool = 4096;  // two per command

  Device& device_;
  Timer& timer_;  // the device's: timestamp support, tick period and mask, query pools
  std::vector<VkOwned<VkQueryPool>> pools_;
  std::vector<Command> commands_;
  bool open_ = false;  // before() wrote a start not yet closed by after()
  uint64_t dropped_ = 0;
};

}  // namespace vkml
