// Device-clock timestamps (Timer) recorded on the stream.
#include "vkml/ops/elementwise.h"
#include "vkml/runtime/timer.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

class TimerTest : public VkmlTest {};

TEST_F(TimerTest, ElapsedCoversWorkAndAdds) {
  Timer& timer = dev().timer();
  ASSERT_TRUE(timer.supported());
  EXPECT_GT(timer.period_ns(), 0.0);
  Buffer buf(dev(), (1 << 16) * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::f32, {1 << 16});
  uint32_t a = timer.acquire(), b = timer.acquire(), c = timer.acquire();
  EXPECT_NE(a, b);
  timer.record(a);
  for (int i = 0; i < 20; ++i) ops::fill(dev(), t, Scalar::of(double(i)));
  timer.record(b);
  for (int i = 0; i < 20; ++i) ops::fill(dev(), t, Scalar::of(double(i)));
  timer.record(c);
  double ab = timer.elapsed_ns(a, b), bc = timer.elapsed_ns(b, c), ac = timer.elapsed_ns(a, c);
  EXPECT_GT(ab, 0.0);
  EXPECT_GT(bc, 0.0);
  // Tick differences are exact integers scaled by the same period.
  EXPECT_NEAR(ac, ab + bc, 1e-6 * ac + timer.period_ns());
  EXPECT_LT(timer.elapsed_ns(b, a), 0.0);
  EXPECT_TRUE(timer.ready(c));
  EXPECT_EQ(buf.read<float>()[0], 19.0f);
  timer.release(a);
  timer.release(b);
  timer.release(c);
}

TEST_F(TimerTest, SlotsAreReusedAndPoolsGrow) {
  Timer& timer = dev().timer();
  std::vector<uint32_t> slots;
  for (int i = 0; i < 300; ++i) slots.push_back(timer.acquire());  // more than one pool
  for (uint32_t s : slots) timer.record(s);
  EXPECT_GE(timer.elapsed_ns(slots.front(), slots.back()), 0.0);
  for (uint32_t s : slots) timer.release(s);
  uint32_t again = timer.acquire();
  timer.record(again);  // a slot recorded before, reset again in the command buffer
  dev().stream().synchronize();
  EXPECT_TRUE(timer.ready(again));
  timer.release(again);
}

TEST_F(TimerTest, UnrecordedSlotIsAnError) {
  Timer& timer = dev().timer();
  uint32_t s = timer.acquire();
  EXPECT_THROW(timer.ticks(s), Error);
  EXPECT_THROW(timer.record(1u << 30), Error);
  timer.release(s);
}

}  // namespace
}  // namespace vkml::test
