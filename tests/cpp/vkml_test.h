#pragma once
// Shared helpers of the core's GoogleTest suite: device 0, a fixture that
// fails any test during which the validation layer spoke, device buffers that
// free themselves, fp16 conversion and tolerant comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/ops/copy.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/runtime.h"

namespace vkml::test {

inline Device& device() { return Runtime::get().device(0); }

// Adds a failure for every validation-layer message since the last call.
inline void expect_no_validation_messages(const char* when) {
  for (const std::string& m : Runtime::get().take_validation_messages())
    ADD_FAILURE() << "Vulkan validation message (" << when << "): " << m;
}

// The error that kernels noted in the device error record (runtime/device_errors.h),
// as the next synchronize raises it: its kind and message; "" when none was noted.
inline std::pair<ErrorKind, std::string> raised_device_error(Device& dev) {
  try {
    dev.synchronize();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::Internal, ""};
}

class VkmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Runtime& rt = Runtime::get();
    ASSERT_TRUE(rt.available()) << rt.unavailable_reason();
    device();  // create the logical device before the test body
    expect_no_validation_messages("before the test");
  }
  void TearDown() override {
    // Raises what kernels noted in the device error record and no test read.
    if (Runtime::get().available()) device().synchronize();
    expect_no_validation_messages("during the test");
  }
  Device& dev() { return device(); }
};

// A device allocation freed on destruction.
class Buffer {
 public:
  Buffer(Device& dev, uint64_t nbytes) : dev_(&dev), bytes_(nbytes) {
    address_ = dev.memory().allocate(nbytes).address;
  }
  template <class T>
  Buffer(Device& dev, const std::vector<T>& host) : Buffer(dev, host.size() * sizeof(T)) {
    ops::upload(dev, address_, host.data(), host.size() * sizeof(T));
  }
  ~Buffer() {
    if (address_) dev_->memory().free(address_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : dev_(o.dev_), address_(o.address_), bytes_(o.bytes_) {
    o.address_ = 0;
  }

  uint64_t address() const { return address_; }
  uint64_t bytes() const { return bytes_; }
  template <class T>
  std::vector<T> read(size_t count) const {
    std::vector<T> out(count);
    ops::download(*dev_, out.data(), address_, count * sizeof(T));
    return out;
  }
  template <class T>
  std::vector<T> read() const {
    return read<T>(bytes_ / sizeof(T));
  }
  template <class T>
  void write(const std::vector<T>& host) {
    ops::upload(*dev_, address_, host.data(), host.size() * sizeof(T));
  }

 private:
  Device* dev_;
  uint64_t address_ = 0;
  uint64_t bytes_ = 0;
};

// out = in + 1 over 256 floats (a small kernel with declared bytes).
inline void plus_one(Device& dev, uint64_t out, uint64_t in) {
  ops::Elementwise e;
  e.op = OP_ADD;
  e.ninputs = 2;
  e.ptr[0] = out;
  e.ptr[1] = in;
  e.scalar[1] = true;
  e.slot[1] = Scalar::of(1.0);
  e.slot[2] = Scalar::of(1.0);
  e.layout.ndim = 1;
  e.layout.sizes[0] = 256;
  e.layout.strides[0][0] = e.layout.strides[1][0] = 1;
  ops::run_elementwise(dev, e);
}
inline void plus_one(Device& dev, const Buffer& out, const Buffer& in) {
  plus_one(dev, out.address(), in.address());
}

// IEEE half <-> float, round to nearest even.
inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65536: inf
  if (abs < 0x38800000u) {                                  // subnormal or zero in f16
    float a;
    std::memcpy(&a, &abs, 4);
    return uint16_t(sign | uint32_t(std::nearbyint(a * 16777216.0f)));  // units of 2^-24
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(mant), -24);
    return sign ? -f : f;
  }
  uint32_t x =
      exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&f, &x, 4);
  return f;
}

// bfloat16 <-> float (bfloat16 is float's upper half), round to nearest even.
inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Float data held as f32, f16 or bf16: the values as the buffer stores them, a
// buffer of them, and a buffer's first n values as floats.
inline std::vector<uint16_t> to_16(DType dt, const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = dt == DType::bf16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
  return out;
}
inline std::vector<float> from_16(DType dt, const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = dt == DType::bf16 ? bf16_to_f32(v[i]) : f16_to_f32(v[i]);
  return out;
}
inline std::vector<uint16_t> to_f16(const std::vector<float>& v) { return to_16(DType::f16, v); }
inline std::vector<float> from_f16(const std::vector<uint16_t>& v) {
  return from_16(DType::f16, v);
}
inline std::vector<float> stored_as(DType dt, const std::vector<float>& v) {
  return dt == DType::f32 ? v : from_16(dt, to_16(dt, v));
}
inline Buffer upload_as(Device& dev, DType dt, const std::vector<float>& v) {
  return dt == DType::f32 ? Buffer(dev, v) : Buffer(dev, to_16(dt, v));
}
inline std::vector<float> read_as(DType dt, const Buffer& b, size_t n) {
  return dt == DType::f32 ? b.read<float>(n) : from_16(dt, b.read<uint16_t>(n));
}

// Deterministic values in [lo, hi).
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = lo + (hi - lo) * float(s >> 8) / 16777216.0f;
  }
  return v;
}

// Elementwise |got - want| <= atol + rtol * |want|; NaN matches NaN.
// Reports the first few mismatches.
template <class T, class U>
void expect_close(const std::vector<T>& got, const std::vector<U>& want, double rtol, double atol,
                  const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = double(got[i]), w = double(want[i]);
    bool ok =
        (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= atol + rtol * std::abs(w);
    if (!ok) {
      ++bad;
      if (reported++ < 5) ADD_FAILURE() << what << " [" << i << "]: got " << g << ", want " << w;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

}  // namespace vkml::test
