#pragma once
// Per-kernel device time (torch.profiler, torch_vkml.profile): while a Profiler is attached, the
// stream puts its barrier before every command (not only where the hazard tracker
// sees a dependency) and the Profiler device-clock timestamps on both sides of it, so
// each kernel's time is its own, measured alone, as a CUDA stream runs kernels one
// after another. Serialising costs the overlap the hazard tracker normally allows; the
// per-kernel breakdown is the point, not the total.
//
// Each command also carries the tag its recording thread had set (profiler_tag()): the
// adapter sets it to the torch.profiler correlation id of the aten op running on that
// thread, so a kernel names the op that launched it without the core knowing of ATen.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "vkml/runtime/vk_api.h"
#include "vkml/runtime/vk_owned.h"

namespace vkml {

class Device;
class Timer;

// This thread's tag for the commands it records from now on (0: none). Read only while
// a Profiler is attached to the stream; setting it costs nothing on the dispatch path.
uint64_t& profiler_tag();

class Profiler {
 public:
  // Throws InvalidArgument where the compute queue has no timestamps.
  explicit Profiler(Device& device);
  ~Profiler();
  Profiler(const Profiler&) = delete;

  // Called by a stream, its lock held, around each command it records into cb:
  // before() returns the command's number for after() (0: past kMaxCommands, run but
  // not timed, counted in dropped()). `pipeline` is null for a buffer copy and for a
  // library's commands, which `label` names (a static string). Streams may call at
  // once: each command has its own pair of queries.
  uint32_t before(VkCommandBuffer cb, int stream);
  void after(VkCommandBuffer cb, uint32_t command, VkPipeline pipeline, uint64_t workgroups,
             const char* label = nullptr);

  struct Kernel {
    std::string name;  // shader[specialization constants], or "copy"
    uint64_t calls = 0;
    uint64_t workgroups = 0;
    double total_ns = 0, max_ns = 0;
  };
  // The time of every command recorded, summed per kernel, most time first. The
  // caller has waited for the stream to finish them.
  std::vector<Kernel> collect();

  // Each timed command in recording order: its raw device-clock ticks on both sides
  // (differences wrap within Timer::tick_mask()) and the tag of the thread that recorded
  // it. The caller has waited for the stream to finish them.
  struct Command {
    VkPipeline pipeline;  // null for a buffer copy or a library's commands
    uint64_t workgroups;
    uint64_t tag;
    const char* label = nullptr;  // a library's commands (VkFFT): their name
    int stream = 0;               // the slot of the stream that recorded it
    uint64_t start_ticks = 0, end_ticks = 0;
  };
  std::vector<Command> commands();
  // The kernel's name: shader[specialization constants], `label` where given, or
  // "copy" for a null pipeline.
  std::string name_of(VkPipeline pipeline, const char* label = nullptr) const;
  uint64_t dropped() const { return dropped_; }

  static constexpr uint32_t kMaxCommands = 1u << 18;

 private:
  static constexpr uint32_t kQueriesPerPool = 4096;  // two per command

  Device& device_;
  Timer& timer_;  // the device's: timestamp support, tick period and mask, query pools
  std::vector<VkOwned<VkQueryPool>> pools_;
  std::mutex mutex_;  // streams record at once
  std::vector<Command> commands_;
  uint64_t dropped_ = 0;
};

}  // namespace vkml
