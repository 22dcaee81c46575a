// The remap kernel (flip, roll, padding, nearest resampling) against C++ references.
#include <numeric>

#include "vkml/ops/remap.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using RemapTest = VkmlTest;
using ops::RemapDim;

std::vector<int32_t> iota(size_t n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Reference gather over dims (outermost first) with contiguous output.
std::vector<int32_t> ref_remap(const std::vector<int32_t>& in, const std::vector<RemapDim>& dims) {
  int64_t numel = 1;
  for (auto& d : dims) numel *= d.out_size;
  std::vector<int32_t> out(numel);
  for (int64_t t = 0; t < numel; ++t) {
    int64_t r = t, off = 0;
    bool zero = false;
    for (int k = int(dims.size()) - 1; k >= 0; --k) {
      int64_t i = r % dims[k].out_size;
      r /= dims[k].out_size;
      int64_t j = ops::remap_index(dims[k], i);
      if (j < 0) zero = true;
      off += j * dims[k].in_stride;
    }
    out[t] = zero ? 0 : in[off];
  }
  return out;
}

RemapDim dim(int64_t out, int64_t in, int64_t stride, int mode, int64_t param = 0,
             float scale = 1.0f) {
  RemapDim d;
  d.out_size = out;
  d.in_size = in;
  d.in_stride = stride;
  d.mode = mode;
  d.param = param;
  d.scale = scale;
  return d;
}

TEST_F(RemapTest, Modes) {
  auto in = iota(3 * 5 * 4);
  std::vector<std::vector<RemapDim>> cases = {
      {dim(3, 3, 20, REMAP_FLIP), dim(5, 5, 4, REMAP_IDENTITY), dim(4, 4, 1, REMAP_FLIP)},
      {dim(3, 3, 20, REMAP_ROLL, 2), dim(5, 5, 4, REMAP_ROLL, -1), dim(4, 4, 1, REMAP_IDENTITY)},
      {dim(3, 3, 20, REMAP_IDENTITY), dim(8, 5, 4, REMAP_REFLECT, 2),
       dim(7, 4, 1, REMAP_REFLECT, 3)},
      {dim(3, 3, 20, REMAP_REPLICATE, 1), dim(9, 5, 4, REMAP_CIRCULAR, 3),
       dim(2, 4, 1, REMAP_CONSTANT, -1)},
      {dim(3, 3, 20, REMAP_IDENTITY), dim(7, 5, 4, REMAP_NEAREST, 0, 5.0f / 7.0f),
       dim(6, 4, 1, REMAP_NEAREST_EXACT, 0, 4.0f / 6.0f)},
      {dim(6, 3, 20, REMAP_DIV, 2), dim(5, 5, 4, REMAP_CONSTANT, 0), dim(4, 4, 1, REMAP_IDENTITY)},
      // transposed input: the identity dims must not merge
      {dim(4, 4, 1, REMAP_IDENTITY), dim(5, 5, 4, REMAP_IDENTITY), dim(3, 3, 20, REMAP_FLIP)},
  };
  Buffer bin(dev(), in);
  for (size_t c = 0; c < cases.size(); ++c) {
    auto want = ref_remap(in, cases[c]);
    Buffer bout(dev(), want.size() * 4);
    ops::remap(dev(), DType::i32, bout.address(), bin.address(), cases[c]);
    EXPECT_EQ(bout.read<int32_t>(), want) << "case " << c;
  }
}

TEST_F(RemapTest, ManyDimsAndElementSizes) {
  // 8 dims: the two outermost are split on the host.
  std::vector<RemapDim> dims;
  int64_t stride = 1;
  std::vector<int64_t> sizes = {2, 3, 2, 2, 3, 2, 2, 3};
  std::vector<RemapDim> rev;
  for (int k = int(sizes.size()) - 1; k >= 0; --k) {
    rev.push_back(dim(sizes[k], sizes[k], stride, k % 2 ? REMAP_FLIP : REMAP_ROLL, 1));
    stride *= sizes[k];
  }
  dims.assign(rev.rbegin(), rev.rend());
  auto in = iota(size_t(stride));
  auto want = ref_remap(in, dims);
  Buffer b32(dev(), in), o32(dev(), want.size() * 4);
  ops::remap(dev(), DType::i32, o32.address(), b32.address(), dims);
  EXPECT_EQ(o32.read<int32_t>(), want);
  std::vector<uint8_t> in8(in.begin(), in.end());
  Buffer b8(dev(), in8), o8(dev(), want.size());
  ops::remap(dev(), DType::u8, o8.address(), b8.address(), dims);
  std::vector<uint8_t> want8(want.begin(), want.end());  // values wrap, as the input did
  EXPECT_EQ(o8.read<uint8_t>(), want8);
  std::vector<int64_t> in64(in.begin(), in.end());
  Buffer b64(dev(), in64), o64(dev(), want.size() * 8);
  ops::remap(dev(), DType::i64, o64.address(), b64.address(), dims);
  auto got64 = o64.read<int64_t>();
  EXPECT_EQ(std::vector<int32_t>(got64.begin(), got64.end()), want);
}

TEST_F(RemapTest, BackwardIsTheAdjoint) {
  // <remap(x), g> == <x, remap_backward(g)> for reflect and replicate padding.
  std::vector<RemapDim> dims = {dim(2, 2, 20, REMAP_IDENTITY), dim(9, 5, 4, REMAP_REFLECT, 2),
                                dim(8, 4, 1, REMAP_REPLICATE, 3)};
  auto g = random_floats(2 * 9 * 8, 3);
  std::vector<float> want(2 * 5 * 4, 0.0f);
  for (int64_t t = 0; t < int64_t(g.size()); ++t) {
    int64_t r = t, off = 0;
    for (int k = 2; k >= 0; --k) {
      int64_t i = r % dims[k].out_size;
      r /= dims[k].out_size;
      off += ops::remap_index(dims[k], i) * dims[k].in_stride;
    }
    want[off] += g[t];
  }
  Buffer bg(dev(), g), bgi(dev(), std::vector<float>(want.size(), 0.0f));
  ops::remap_backward(dev(), bgi.address(), bg.address(), dims);
  expect_close(bgi.read<float>(), want, 1e-5, 1e-5);
}

}  // namespace
}  // namespace vkml::test
