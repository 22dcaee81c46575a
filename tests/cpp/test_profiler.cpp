// Per-kernel device time (Profiler) attached to the stream.
#include "vkml/ops/copy.h"
#include "vkml/ops/elementwise.h"
#include "vkml/runtime/profiler.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ProfilerTest = VkmlTest;

// More commands than one query pool holds (two queries each), so the pools grow and
// are read in several parts; the results stay right with the kernels serialised.
TEST_F(ProfilerTest, CountsEveryCommandPerKernel) {
  Buffer buf(dev(), 4096 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::f32, {4096});
  dev().start_profiling();
  const int fills = 2100;
  for (int i = 0; i < fills; ++i) ops::fill(dev(), t, Scalar::of(double(i)));
  std::vector<float> host(4096, 0.0f);
  ops::upload(dev(), buf.address(), host.data(), 16);  // one copy, at least
  std::vector<Profiler::Kernel> kernels = dev().stop_profiling();
  ASSERT_FALSE(kernels.empty());
  uint64_t calls = 0, copies = 0;
  for (const Profiler::Kernel& k : kernels) {
    EXPECT_FALSE(k.name.empty());
    EXPECT_GE(k.total_ns, k.max_ns);
    EXPECT_GE(k.max_ns, 0.0);
    calls += k.calls;
    if (k.name == "copy") copies += k.calls;
  }
  EXPECT_GE(copies, 1u);
  EXPECT_GE(calls, uint64_t(fills) + copies);
  const Profiler::Kernel& top = kernels.front();
  for (const Profiler::Kernel& k : kernels) EXPECT_LE(k.total_ns, top.total_ns);
  bool fill_seen = false;
  for (const Profiler::Kernel& k : kernels)
    fill_seen |= k.calls == uint64_t(fills) && k.name.rfind("elementwise", 0) == 0 &&
                 k.name.find('[') != std::string::npos;
  EXPECT_TRUE(fill_seen);
  std::vector<float> out = buf.read<float>();
  EXPECT_EQ(out[0], 0.0f);                 // the upload came last
  EXPECT_EQ(out[4095], float(fills - 1));  // the fills before it all ran
}

TEST_F(ProfilerTest, StopWithoutStartIsAnErrorAndRestartClears) {
  EXPECT_THROW(dev().stop_profiling(), Error);
  Buffer buf(dev(), 64 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::f32, {64});
  dev().start_profiling();
  ops::fill(dev(), t, Scalar::of(1.0));
  dev().start_profiling();  // restarts: the fill above is not counted
  EXPECT_TRUE(dev().stop_profiling().empty());
  EXPECT_EQ(buf.read<float>()[0], 1.0f);
}

}  // namespace
}  // namespace vkml::test
