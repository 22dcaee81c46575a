// Each timed command carries its recording thread's tag (profiler_tag()) and its raw
// device-clock ticks, in recording order: what torch.profiler's trace is built from.
#include <thread>

#include "vkml/ops/elementwise.h"
#include "vkml/runtime/profiler.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ProfilerTagsTest = VkmlTest;

TEST_F(ProfilerTagsTest, CommandsCarryTheirThreadsTagAndOrderedTicks) {
  Buffer buf(dev(), 256 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::f32, {256});
  Profiler profiler(dev());
  dev().stream().set_profiler(&profiler);
  profiler_tag() = 7;
  ops::fill(dev(), t, Scalar::of(1.0));
  profiler_tag() = 9;
  ops::fill(dev(), t, Scalar::of(2.0));
  std::thread other([&] {  // a thread's tag is its own
    profiler_tag() = 11;
    ops::fill(dev(), t, Scalar::of(3.0));
  });
  other.join();
  EXPECT_EQ(profiler_tag(), 9u);
  profiler_tag() = 0;
  std::vector<float> host(256, 4.0f);
  ops::upload(dev(), buf.address(), host.data(), host.size() * 4);  // a copy, untagged
  dev().stream().set_profiler(nullptr);
  dev().stream().synchronize();

  std::vector<Profiler::Command> commands = profiler.commands();
  std::vector<uint64_t> tags;
  for (const Profiler::Command& c : commands) tags.push_back(c.tag);
  ASSERT_GE(commands.size(), 4u);
  EXPECT_EQ(std::vector<uint64_t>(tags.begin(), tags.begin() + 3),
            (std::vector<uint64_t>{7, 9, 11}));
  EXPECT_EQ(commands.back().pipeline, VkPipeline(VK_NULL_HANDLE));
  EXPECT_EQ(commands.back().tag, 0u);
  EXPECT_EQ(profiler.name_of(VK_NULL_HANDLE), "copy");
  EXPECT_EQ(profiler.name_of(commands[0].pipeline).rfind("elementwise", 0), 0u);
  // Serialised: each command starts after the one before ended.
  const uint64_t mask = dev().timer().tick_mask();
  for (size_t i = 0; i < commands.size(); ++i) {
    EXPECT_LT((commands[i].end_ticks - commands[i].start_ticks) & mask, mask / 2);
    if (i > 0) EXPECT_LT((commands[i].start_ticks - commands[i - 1].end_ticks) & mask, mask / 2);
  }
  EXPECT_EQ(buf.read<float>()[255], 4.0f);
}

}  // namespace
}  // namespace vkml::test
