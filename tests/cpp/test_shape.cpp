// Data movement kernels (cat, tri, repeat_index) against C++ references.
#include <numeric>

#include "vkml/ops/shape.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ShapeTest = VkmlTest;

std::vector<int32_t> iota(size_t n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST_F(ShapeTest, CatOneDispatchManyInputs) {
  // 30 inputs of [2, size_i, 3], one of them transposed in its last two dims.
  int64_t outer = 2, inner = 3;
  std::vector<Buffer> bufs;
  std::vector<ops::CatInput> inputs;
  std::vector<std::vector<int64_t>> host;
  int64_t total = 0;
  for (int n = 0; n < 30; ++n) {
    int64_t size = n % 4;  // includes empty inputs
    std::vector<int64_t> v(size_t(outer * size * inner));
    for (size_t e = 0; e < v.size(); ++e) v[e] = n * 1000 + int64_t(e);
    bufs.emplace_back(dev(), v.empty() ? std::vector<int64_t>{0} : v);
    bool transposed = n == 7;
    inputs.push_back(
        {bufs.back().address(), size, size * inner, transposed ? 1 : inner, transposed ? size : 1});
    host.push_back(v);
    total += size;
  }
  std::vector<int64_t> want;
  for (int64_t o = 0; o < outer; ++o)
    for (int n = 0; n < 30; ++n)
      for (int64_t s = 0; s < inputs[n].size; ++s)
        for (int64_t i = 0; i < inner; ++i)
          want.push_back(host[n][o * inputs[n].stride_outer + s * inputs[n].stride_dim +
                                 i * inputs[n].stride_inner]);
  Buffer out(dev(), uint64_t(outer * total * inner) * 8);
  ops::cat(dev(), DType::i64, out.address(), inputs, outer, inner);
  EXPECT_EQ(out.read<int64_t>(), want);
}

TEST_F(ShapeTest, TrilTriuInPlaceAndStrided) {
  int64_t b = 2, r = 3, c = 4;
  auto in = iota(size_t(b * r * c), 1);
  for (bool upper : {false, true})
    for (int64_t k : {-1, 0, 2}) {
      std::vector<int32_t> want(in.size());
      for (int64_t x = 0; x < b; ++x)
        for (int64_t i = 0; i < r; ++i)
          for (int64_t j = 0; j < c; ++j) {
            bool keep = upper ? j - i >= k : j - i <= k;
            want[(x * r + i) * c + j] = keep ? in[(x * r + i) * c + j] : 0;
          }
      Buffer buf(dev(), in);
      ops::MatrixRef m{buf.address(), {r * c, c, 1}};
      ops::tri(dev(), DType::i32, m, m, b, r, c, k, upper);  // in place
      EXPECT_EQ(buf.read<int32_t>(), want) << upper << " " << k;
    }
}

TEST_F(ShapeTest, RepeatIndexAcrossScanChunks) {
  std::vector<int64_t> r(600);
  for (size_t i = 0; i < r.size(); ++i) r[i] = int64_t(i % 4);  // includes zeros
  std::vector<int64_t> want;
  for (size_t i = 0; i < r.size(); ++i) want.insert(want.end(), size_t(r[i]), int64_t(i));
  Buffer br(dev(), r), cum(dev(), r.size() * 4), out(dev(), want.size() * 8);
  ops::repeat_index(dev(), br.address(), cum.address(), out.address(), int64_t(r.size()),
                    int64_t(want.size()), false);
  EXPECT_EQ(out.read<int64_t>(), want);
}

}  // namespace
}  // namespace vkml::test
