// The asynchronous stream: batching of dispatches into submits, synchronize.
#include <algorithm>
#include <cstdlib>

#include "vkml/ops/copy.h"
#include "vkml/ops/elementwise.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

class StreamTest : public VkmlTest {
 protected:
  void TearDown() override {
    const char* env = std::getenv("TORCH_VKML_BATCH");
    dev().stream().set_batch_size(env ? uint32_t(atoi(env)) : 32);
    VkmlTest::TearDown();
  }
};

TEST_F(StreamTest, DispatchesAreBatched) {
  Stream& s = dev().stream();
  Buffer buf(dev(), 64 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::f32, {64});
  s.synchronize();
  const uint32_t batch = 8;
  const int n = 100;
  s.set_batch_size(batch);
  uint64_t d0 = s.dispatch_count(), s0 = s.submit_count();
  for (int i = 0; i < n; ++i) ops::fill(dev(), t, Scalar::of(double(i)));
  EXPECT_EQ(s.dispatch_count() - d0, uint64_t(n));
  EXPECT_EQ(s.submit_count() - s0, uint64_t(n / batch));  // the rest is still recording
  s.synchronize();
  EXPECT_EQ(s.submit_count() - s0, uint64_t(n / batch + 1));
  EXPECT_EQ(buf.read<float>(), std::vector<float>(64, float(n - 1)));
}

TEST_F(StreamTest, FewDispatchesDoNotSubmit) {
  Stream& s = dev().stream();
  Buffer buf(dev(), 16 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::i32, {16});
  s.synchronize();
  s.set_batch_size(32);
  uint64_t s0 = s.submit_count();
  for (int i = 0; i < 5; ++i) ops::fill(dev(), t, Scalar::of_int(i));
  EXPECT_EQ(s.submit_count(), s0);
  uint64_t v = s.flush();
  EXPECT_EQ(s.submit_count(), s0 + 1);
  s.wait(v);
  EXPECT_GE(s.completed_value(), v);
  EXPECT_EQ(buf.read<int32_t>(), std::vector<int32_t>(16, 4));
}

// After a wait leaves the GPU idle, batches ramp 4, 8, 16 up to the batch size, so
// the GPU starts before a whole batch is recorded.
TEST_F(StreamTest, BatchesRampUpAfterTheGpuIdled) {
  Stream& s = dev().stream();
  Buffer buf(dev(), 16 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::i32, {16});
  s.set_batch_size(32);
  s.synchronize();
  auto fills = [&](int n) {
    for (int i = 0; i < n; ++i) ops::fill(dev(), t, Scalar::of_int(i));
  };
  uint64_t s0 = s.submit_count();
  fills(3);
  EXPECT_EQ(s.submit_count(), s0);  // below the first batch
  fills(1);
  EXPECT_EQ(s.submit_count(), s0 + 1);  // 4
  fills(8);
  EXPECT_EQ(s.submit_count(), s0 + 2);  // 8
  fills(16);
  EXPECT_EQ(s.submit_count(), s0 + 3);  // 16
  fills(31);
  EXPECT_EQ(s.submit_count(), s0 + 3);  // then whole batches of 32
  fills(1);
  EXPECT_EQ(s.submit_count(), s0 + 4);
  s.synchronize();  // idle again: the ramp restarts
  uint64_t s1 = s.submit_count();
  fills(4);
  EXPECT_EQ(s.submit_count(), s1 + 1);
  s.synchronize();
  EXPECT_EQ(buf.read<int32_t>(), std::vector<int32_t>(16, 3));
}

TEST_F(StreamTest, BigDispatchIsSubmittedAtOnce) {
  Stream& s = dev().stream();
  // fill runs 256-wide groups, each thread storing four aligned floats
  const int64_t n = int64_t(Stream::kFlushWorkgroups) * 256 * 4;
  Buffer buf(dev(), uint64_t(n) * 4);
  s.synchronize();
  s.set_batch_size(32);
  uint64_t s0 = s.submit_count();
  ops::fill(dev(), TensorRef::contiguous(buf.address(), DType::f32, {n}), Scalar::of(1.5));
  EXPECT_EQ(s.submit_count(), s0 + 1);
  s.synchronize();
  std::vector<float> got = buf.read<float>();
  EXPECT_EQ(got.front(), 1.5f);
  EXPECT_EQ(got.back(), 1.5f);
}

TEST_F(StreamTest, SyncsCountWaitsForUnfinishedWork) {
  Stream& s = dev().stream();
  // Milliseconds of work per batch on lavapipe: flush() retires what already finished,
  // and with a few bytes lavapipe's queue thread sometimes finished first (no wait).
  const int64_t n = int64_t(1) << 22;
  Buffer buf(dev(), uint64_t(n) * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::i32, {n});
  s.synchronize();
  uint64_t n0 = s.sync_count();
  s.synchronize();  // nothing new: no wait
  EXPECT_EQ(s.sync_count(), n0);
  ops::fill(dev(), t, Scalar::of_int(7));
  uint64_t v = s.flush();
  s.wait(v);
  EXPECT_EQ(s.sync_count(), n0 + 1);
  s.wait(v);  // already seen finished
  EXPECT_EQ(s.sync_count(), n0 + 1);
  std::vector<int32_t> got = buf.read<int32_t>();  // a read-back waits
  EXPECT_EQ(s.sync_count(), n0 + 2);
  EXPECT_EQ(got.front(), 7);
  EXPECT_EQ(got.back(), 7);
}

// A host far ahead of the GPU waits for the oldest batch once kMaxInFlight are
// queued (one dispatch per batch here, each slow on lavapipe), rather than
// holding ever more command buffers.
TEST_F(StreamTest, QueuedBatchesAreBounded) {
  Stream& s = dev().stream();
  const int64_t n = 1 << 20;
  Buffer buf(dev(), uint64_t(n) * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::f32, {n});
  s.synchronize();
  s.set_batch_size(1);
  const uint64_t syncs = s.sync_count();
  size_t most = 0;
  const int dispatches = int(Stream::kMaxInFlight) + 40;
  for (int i = 0; i < dispatches; ++i) {
    ops::fill(dev(), t, Scalar::of(double(i)));
    most = std::max(most, s.in_flight());
  }
  EXPECT_LE(most, Stream::kMaxInFlight);
  // Reaching the bound means the host waited (how far ahead it gets is timing).
  if (most == Stream::kMaxInFlight) EXPECT_GT(s.sync_count(), syncs);
  s.synchronize();
  EXPECT_EQ(s.in_flight(), 0u);
  std::vector<float> got = buf.read<float>();
  EXPECT_EQ(got.front(), float(dispatches - 1));
  EXPECT_EQ(got.back(), float(dispatches - 1));
}

TEST_F(StreamTest, SynchronizeWithNothingRecorded) {
  Stream& s = dev().stream();
  s.synchronize();
  uint64_t s0 = s.submit_count();
  s.synchronize();
  s.synchronize();
  EXPECT_EQ(s.submit_count(), s0);
}

// Each dispatch sees what the previous one wrote (the stream's barriers).
TEST_F(StreamTest, DependentDispatchesAreOrdered) {
  Buffer buf(dev(), 1000 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::i32, {1000});
  ops::fill(dev(), t, Scalar::of_int(0));
  for (int i = 0; i < 50; ++i) {
    ops::Elementwise e;
    e.op = OP_ADD;
    e.dtype = DType::i32;
    e.ninputs = 2;
    e.ptr[0] = buf.address();
    e.ptr[1] = buf.address();
    e.scalar[1] = true;
    e.slot[1] = Scalar::of_int(1);
    e.slot[2] = Scalar::of_int(1);  // alpha
    ops::set_operand_from(e.layout, 0, t);
    ops::set_operand_from(e.layout, 1, t);
    ops::set_operand_from(e.layout, 2, t);
    ops::run_elementwise(dev(), e);
  }
  EXPECT_EQ(buf.read<int32_t>(), std::vector<int32_t>(1000, 50));
}

// Work on the calling thread's current stream (Device::stream()) for a scope.
class OnStream {
 public:
  OnStream(Device& dev, int slot) : dev_(dev) { set_current_stream_slot(dev.index(), slot); }
  ~OnStream() { set_current_stream_slot(dev_.index(), 0); }

 private:
  Device& dev_;
};

// Two streams of a device: each has its own timeline, and one waits for the other only
// through wait_for (a GPU-side wait: the host never blocks for it).
TEST_F(StreamTest, StreamsWaitForEachOtherOnlyThroughWaitFor) {
  Stream& main = dev().stream(0);
  Stream& side = dev().stream(1);
  EXPECT_NE(&main, &side);
  EXPECT_EQ(side.slot(), 1);
  Buffer buf(dev(), 256 * 4);
  TensorRef t = TensorRef::contiguous(buf.address(), DType::i32, {256});
  ops::fill(dev(), t, Scalar::of_int(1));
  dev().wait_idle();
  side.hold();
  uint64_t filled;
  {
    OnStream on(dev(), 1);
    EXPECT_EQ(&dev().stream(), &side);
    ops::fill(dev(), t, Scalar::of_int(7));
    filled = side.flush();
  }
  EXPECT_LT(side.completed_value(), filled);  // held on the GPU
  main.wait_for(side, filled);
  const uint64_t after = main.flush();  // the wait alone is a submission
  EXPECT_LT(main.completed_value(), after);
  side.release_hold();
  main.wait(after);
  EXPECT_GE(side.completed_value(), filled);
  // Waiting for what already finished, or for itself, submits nothing.
  const uint64_t submits = main.submit_count();
  main.wait_for(side, filled);
  main.wait_for(main, main.flush());
  EXPECT_EQ(main.flush(), after);
  EXPECT_EQ(main.submit_count(), submits);
  EXPECT_EQ(buf.read<int32_t>(), std::vector<int32_t>(256, 7));
}

// Pinned memory any stream's copies may use goes back only once every stream passed.
TEST_F(StreamTest, FreeAfterAllStreamsWaitsForTheLastStream) {
  Stream& side = dev().stream(2);
  dev().wait_idle();
  const int64_t before = dev().staging().stats().allocated_bytes[kAllPools].current;
  Allocation a = dev().staging().allocate(4096);
  side.hold();
  side.flush();  // the held wait is submitted
  dev().free_after_all_streams(dev().staging(), a.address);
  dev().stream(0).completed_value();  // the default stream's share is released
  side.completed_value();
  EXPECT_GT(dev().staging().stats().allocated_bytes[kAllPools].current, before);
  side.release_hold();
  dev().wait_idle();
  EXPECT_EQ(dev().staging().stats().allocated_bytes[kAllPools].current, before);
}

}  // namespace
}  // namespace vkml::test
