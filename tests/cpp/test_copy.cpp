// Host <-> device transfers and the strided, converting device copy.
#include <cstdint>
#include <numeric>

#include "vkml/ops/copy.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using CopyTest = VkmlTest;

TEST_F(CopyTest, RoundTripSmall) {
  for (size_t n : {size_t(0), size_t(1), size_t(1000)}) {
    SCOPED_TRACE(n);
    std::vector<uint8_t> host(n);
    for (size_t i = 0; i < n; ++i) host[i] = uint8_t(i * 7 + 3);
    Buffer buf(dev(), n);
    ops::upload(dev(), buf.address(), host.data(), n);
    std::vector<uint8_t> back(n, 0xee);
    ops::download(dev(), back.data(), buf.address(), n);
    EXPECT_EQ(back, host);
  }
}

TEST_F(CopyTest, DownloadInOverlappedChunks) {
  const size_t n = 10007;
  std::vector<uint8_t> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = uint8_t(i * 13 + 1);
  Buffer buf(dev(), host);
  for (uint64_t chunk : {uint64_t(1000), uint64_t(5003), uint64_t(10007), uint64_t(1) << 20}) {
    SCOPED_TRACE(chunk);
    std::vector<uint8_t> back(n, 0xee);
    ops::download(dev(), back.data(), buf.address(), n, chunk);
    EXPECT_EQ(back, host);
  }
}

TEST_F(CopyTest, RoundTripOver128MiB) {
  // Larger than a staging chunk, so both directions take several chunks.
  const size_t n = (160ull << 20) / 4;
  {
    std::vector<uint32_t> host(n);
    std::iota(host.begin(), host.end(), 0x12345u);
    Buffer buf(dev(), host);
    std::vector<uint32_t> back = buf.read<uint32_t>(n);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += back[i] != host[i];
    EXPECT_EQ(bad, 0u);
  }
  dev().release_cached_memory();
}

TEST_F(CopyTest, DeviceToDeviceBytes) {
  std::vector<int32_t> host = {5, -6, 7, -8, 9};
  Buffer a(dev(), host);
  Buffer b(dev(), host.size() * 4);
  ops::copy_bytes(dev(), b.address(), a.address(), host.size() * 4);
  EXPECT_EQ(b.read<int32_t>(host.size()), host);
}

// A transposed f32 view -> contiguous f16 -> i64 -> i32 -> bool -> f32.
TEST_F(CopyTest, StridedWithDtypeConversion) {
  const int64_t R = 3, C = 5;
  std::vector<float> src(R * C);
  for (int64_t i = 0; i < R * C; ++i) src[i] = float(i) * 0.75f - 5.0f;  // exact in f16
  Buffer s(dev(), src);
  // src viewed as its transpose [C, R] with strides {1, C}.
  TensorRef st;
  st.address = s.address();
  st.dtype = DType::f32;
  st.ndim = 2;
  st.sizes[0] = C;
  st.sizes[1] = R;
  st.strides[0] = 1;
  st.strides[1] = C;
  std::vector<float> transposed(R * C);
  for (int64_t i = 0; i < C; ++i)
    for (int64_t j = 0; j < R; ++j) transposed[i * R + j] = src[j * C + i];

  Buffer h(dev(), R * C * 2);
  TensorRef ht = TensorRef::contiguous(h.address(), DType::f16, {C, R});
  ops::copy(dev(), ht, st);
  EXPECT_EQ(from_f16(h.read<uint16_t>()), transposed);

  Buffer l(dev(), R * C * 8);
  TensorRef lt = TensorRef::contiguous(l.address(), DType::i64, {C, R});
  ops::copy(dev(), lt, ht);
  std::vector<int64_t> want_l(R * C);
  for (size_t i = 0; i < want_l.size(); ++i) want_l[i] = int64_t(transposed[i]);  // truncation
  EXPECT_EQ(l.read<int64_t>(), want_l);

  Buffer w(dev(), R * C * 4);
  TensorRef wt = TensorRef::contiguous(w.address(), DType::i32, {C, R});
  ops::copy(dev(), wt, lt);
  std::vector<int32_t> want_w(want_l.begin(), want_l.end());
  EXPECT_EQ(w.read<int32_t>(), want_w);

  Buffer b(dev(), R * C);
  TensorRef bt = TensorRef::contiguous(b.address(), DType::b8, {C, R});
  ops::copy(dev(), bt, wt);
  std::vector<uint8_t> want_b(R * C);
  for (size_t i = 0; i < want_b.size(); ++i) want_b[i] = want_w[i] != 0;
  EXPECT_EQ(b.read<uint8_t>(R * C), want_b);

  Buffer f(dev(), R * C * 4);
  TensorRef ft = TensorRef::contiguous(f.address(), DType::f32, {C, R});
  ops::copy(dev(), ft, bt);
  std::vector<float> want_f(want_b.begin(), want_b.end());
  EXPECT_EQ(f.read<float>(), want_f);

  // f16 -> f32 back, and i64 -> f16.
  ops::copy(dev(), ft, ht);
  EXPECT_EQ(f.read<float>(), transposed);
  ops::copy(dev(), ht, lt);
  std::vector<float> want_h(want_l.begin(), want_l.end());
  EXPECT_EQ(from_f16(h.read<uint16_t>()), want_h);
}

TEST_F(CopyTest, BroadcastWithZeroStrides) {
  std::vector<int32_t> row = {1, 2, 3, 4};
  Buffer s(dev(), row);
  TensorRef st;
  st.address = s.address();
  st.dtype = DType::i32;
  st.ndim = 2;
  st.sizes[0] = 3;
  st.sizes[1] = 4;
  st.strides[0] = 0;
  st.strides[1] = 1;
  Buffer d(dev(), 12 * 8);
  TensorRef dt = TensorRef::contiguous(d.address(), DType::i64, {3, 4});
  ops::copy(dev(), dt, st);
  std::vector<int64_t> want;
  for (int i = 0; i < 3; ++i) want.insert(want.end(), row.begin(), row.end());
  EXPECT_EQ(d.read<int64_t>(), want);
}

}  // namespace
}  // namespace vkml::test
