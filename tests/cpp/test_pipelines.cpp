// Pipeline creation from several threads, warming a list of pipelines in the
// background, and the per-call-site slot tables.
#include <thread>
#include <vector>

#include "vkml/runtime/pipeline_slots.h"
#include "vkml/runtime/pipelines.h"
#include "vkml/shaders/op_codes.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using PipelinesTest = VkmlTest;

// Spec constants no other test uses, so each test creates fresh pipelines.
constexpr int32_t kOps[] = {OP_SIN, OP_COS, OP_TAN, OP_EXP, OP_LOG, OP_SQRT};

TEST_F(PipelinesTest, ThreadsCreatingTheSamePipelinesAgree) {
  Pipelines& p = dev().pipelines();
  const int threads = 4;
  std::vector<std::vector<VkPipeline>> got(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int32_t op : kOps) got[t].push_back(p.get(Shader::elementwise_f16, {op}));
    });
  for (auto& th : pool) th.join();
  for (int t = 1; t < threads; ++t) EXPECT_EQ(got[t], got[0]);
  for (VkPipeline h : got[0]) EXPECT_NE(h, VkPipeline(VK_NULL_HANDLE));
}

TEST_F(PipelinesTest, PrewarmCreatesTheListedPipelines) {
  Pipelines& p = dev().pipelines();
  std::vector<std::pair<std::string, SpecConstants>> keys;
  for (int32_t op : kOps) keys.emplace_back("elementwise_i32", SpecConstants{op});
  keys.emplace_back("no_such_shader_any_more", SpecConstants{1});  // skipped, not an error
  size_t before = p.size();
  p.prewarm(keys, 3);
  p.wait_prewarm();
  EXPECT_EQ(p.size(), before + std::size(kOps));
  p.get(Shader::elementwise_i32, {OP_SIN});  // already there: nothing new
  EXPECT_EQ(p.size(), before + std::size(kOps));
}

// A required subgroup size makes a pipeline of its own; devices without subgroup
// size control refuse one.
TEST_F(PipelinesTest, RequiredSubgroupSizeIsPartOfTheKey) {
  Pipelines& p = dev().pipelines();
  const DeviceInfo& info = dev().info();
  if (!info.subgroup_size_control) {
    EXPECT_THROW(p.get(Shader::elementwise_u8, SpecConstants({OP_ABS}, 8)), Error);
    return;
  }
  VkPipeline any = p.get(Shader::elementwise_u8, {OP_ABS});
  VkPipeline fixed = p.get(Shader::elementwise_u8, SpecConstants({OP_ABS}, info.min_subgroup_size));
  EXPECT_NE(fixed, VkPipeline(VK_NULL_HANDLE));
  EXPECT_NE(fixed, any);
  // Not the same as a second specialization constant of that value.
  EXPECT_NE(fixed, p.get(Shader::elementwise_u8, {OP_ABS, int32_t(info.min_subgroup_size)}));
  EXPECT_EQ(fixed, p.get(Shader::elementwise_u8, SpecConstants({OP_ABS}, info.min_subgroup_size)));
}

// A combination's pipeline is made once and then read from its slot; values out
// of their ranges (or the wrong number of them) are made every time.
TEST_F(PipelinesTest, SlotsMakeEachCombinationOnce) {
  static const PipelineSlots slots({2, 3});
  int made = 0;
  auto make = [&](int32_t op) {
    return [&, op] {
      ++made;
      return dev().pipelines().get(Shader::elementwise_i32, {op});
    };
  };
  VkPipeline a = slots.get(dev(), {1, 2}, make(OP_SIN));
  EXPECT_EQ(slots.get(dev(), {1, 2}, make(OP_SIN)), a);
  EXPECT_EQ(made, 1);
  VkPipeline b = slots.get(dev(), {0, 2}, make(OP_COS));
  EXPECT_NE(b, a);
  EXPECT_EQ(made, 2);
  slots.get(dev(), {2, 0}, make(OP_TAN));
  slots.get(dev(), {2, 0}, make(OP_TAN));
  slots.get(dev(), {1}, make(OP_TAN));
  EXPECT_EQ(made, 5);
  EXPECT_EQ(slots.get(dev(), {0, 2}, make(OP_COS)), b);
  EXPECT_EQ(made, 5);
}

}  // namespace
}  // namespace vkml::test
