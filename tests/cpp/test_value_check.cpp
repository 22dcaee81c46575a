// Value checks on the device and the device error record: a failure is noted by the
// kernel and raised, once, by the next host read of the device.
#include <limits>

#include "vkml/ops/value_check.h"
#include "vkml/shaders/device_error.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ValueCheckTest = VkmlTest;

TensorRef contiguous(const Buffer& b, DType dt, int64_t n) {
  TensorRef r;
  r.address = b.address();
  r.dtype = dt;
  r.ndim = 1;
  r.sizes[0] = n;
  r.strides[0] = 1;
  return r;
}

TEST_F(ValueCheckTest, IntegersInRangePassAndTheFirstOutOfRangeIsNoted) {
  Device& d = dev();
  std::vector<int64_t> ok = {0, 3, 9, 4};
  Buffer b_ok(d, ok);
  ops::check_int_range(d, contiguous(b_ok, DType::i64, 4), 0, 9, DEVICE_ERROR_INDEX_IN_SELF,
                       DEVICE_ERROR_INDEX_IN_SELF);
  EXPECT_EQ(raised_device_error(d).second, "");

  std::vector<int32_t> bad = {1, 12, 2};
  Buffer b_bad(d, bad);
  ops::check_int_range(d, contiguous(b_bad, DType::i32, 3), -10, 9, DEVICE_ERROR_INDEX_BOUNDS,
                       DEVICE_ERROR_INDEX_BOUNDS, 10, 1);
  auto [kind, message] = raised_device_error(d);
  EXPECT_EQ(kind, ErrorKind::ValueCheck);
  EXPECT_EQ(message, "index 12 is out of bounds for dimension 1 with size 10");
  EXPECT_EQ(raised_device_error(d).second, "") << "the record is cleared once raised";
}

TEST_F(ValueCheckTest, ChecksKeepTheirOrder) {
  Device& d = dev();
  std::vector<int64_t> v = {-1, 7};
  Buffer b(d, v);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ops::check_int_range(d, contiguous(b, DType::i64, 2), 0, kMax, DEVICE_ERROR_ONE_HOT_NEGATIVE,
                       DEVICE_ERROR_ONE_HOT_NEGATIVE);
  ops::check_int_range(d, contiguous(b, DType::i64, 2), kMin, 2, DEVICE_ERROR_ONE_HOT_CLASSES,
                       DEVICE_ERROR_ONE_HOT_CLASSES);
  EXPECT_EQ(raised_device_error(d).second, "Class values must be non-negative.");
}

TEST_F(ValueCheckTest, FloatValues) {
  Device& d = dev();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {-0.5f, nan, inf}) {
    std::vector<float> v = {0.25f, bad, 1.0f};
    Buffer b(d, v);
    ops::check_float_values(d, contiguous(b, DType::f32, 3), false,
                            DEVICE_ERROR_MULTINOMIAL_PROBABILITY);
    EXPECT_EQ(raised_device_error(d).second, "probability tensor contains either `inf`, `nan` or element < 0")
        << bad;
  }
  std::vector<float> sums = {1.0f, 0.0f};
  Buffer bs(d, sums);
  ops::check_float_values(d, contiguous(bs, DType::f32, 2), true, DEVICE_ERROR_MULTINOMIAL_SUM);
  EXPECT_EQ(raised_device_error(d).second, "invalid multinomial distribution (sum of probabilities <= 0)");
  std::vector<float> good = {0.0f, 2.0f};
  Buffer bg(d, good);
  ops::check_float_values(d, contiguous(bg, DType::f32, 2), false,
                          DEVICE_ERROR_MULTINOMIAL_PROBABILITY);
  EXPECT_EQ(raised_device_error(d).second, "");
}

TEST_F(ValueCheckTest, ADownloadRaisesWhatTheKernelsBeforeItNoted) {
  Device& d = dev();
  std::vector<int64_t> v = {5};
  Buffer b(d, v);
  ops::check_int_range(d, contiguous(b, DType::i64, 1), 0, 3, DEVICE_ERROR_TARGET,
                       DEVICE_ERROR_TARGET);
  int64_t out = 0;
  try {
    ops::download(d, &out, b.address(), sizeof(out));
    ADD_FAILURE() << "the download did not raise";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::IndexOutOfRange);
    EXPECT_STREQ(e.what(), "Target 5 is out of bounds.");
  }
  EXPECT_EQ(out, 5) << "the bytes arrived before the error was raised";
}

}  // namespace
}  // namespace vkml::test
