// Convolution forward, data grad and weight grad against a double-precision reference.
#include "vkml/ops/conv.h"
#include "vkml/ops/matmul.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using ops::ConvShape;
using ConvTest = VkmlTest;

int64_t vol(const int64_t* v) { return v[0] * v[1] * v[2]; }

// Calls f(n, co, ci_global, x_offset, y_offset, w_offset) for every product term.
template <class F>
void for_each_term(const ConvShape& s, F f) {
  int64_t cig = s.ci / s.groups, cog = s.co / s.groups;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t co = 0; co < s.co; ++co)
      for (int64_t oz = 0; oz < s.out[0]; ++oz)
        for (int64_t oy = 0; oy < s.out[1]; ++oy)
          for (int64_t ox = 0; ox < s.out[2]; ++ox)
            for (int64_t cl = 0; cl < cig; ++cl)
              for (int64_t kz = 0; kz < s.kernel[0]; ++kz)
                for (int64_t ky = 0; ky < s.kernel[1]; ++ky)
                  for (int64_t kx = 0; kx < s.kernel[2]; ++kx) {
                    int64_t iz = oz * s.stride[0] - s.pad[0] + kz * s.dilation[0];
                    int64_t iy = oy * s.stride[1] - s.pad[1] + ky * s.dilation[1];
                    int64_t ix = ox * s.stride[2] - s.pad[2] + kx * s.dilation[2];
                    if (iz < 0 || iy < 0 || ix < 0 || iz >= s.in[0] || iy >= s.in[1] ||
                        ix >= s.in[2])
                      continue;
                    int64_t ci = co / cog * cig + cl;
                    int64_t xo = (((n * s.ci + ci) * s.in[0] + iz) * s.in[1] + iy) * s.in[2] + ix;
                    int64_t yo =
                        (((n * s.co + co) * s.out[0] + oz) * s.out[1] + oy) * s.out[2] + ox;
                    int64_t wo =
                        (((co * cig + cl) * s.kernel[0] + kz) * s.kernel[1] + ky) * s.kernel[2] +
                        kx;
                    f(xo, yo, wo);
                  }
}

void check(Device& dev, ConvShape s, DType dt) {
  for (int d = 0; d < 3; ++d)
    s.out[d] = (s.in[d] + 2 * s.pad[d] - s.dilation[d] * (s.kernel[d] - 1) - 1) / s.stride[d] + 1;
  int64_t nx = s.n * s.ci * vol(s.in), ny = s.n * s.co * vol(s.out);
  int64_t nw = s.co * (s.ci / s.groups) * vol(s.kernel);
  auto rt = [&](std::vector<float> v) { return dt == DType::f16 ? from_f16(to_f16(v)) : v; };
  auto up = [&](const std::vector<float>& v) {
    return dt == DType::f16 ? Buffer(dev, to_f16(v)) : Buffer(dev, v);
  };
  auto rd = [&](const Buffer& b, size_t n) {
    return dt == DType::f16 ? from_f16(b.read<uint16_t>(n)) : b.read<float>(n);
  };
  auto x = rt(random_floats(nx, 1)), w = rt(random_floats(nw, 2)), gy = rt(random_floats(ny, 3));
  auto bias = rt(random_floats(s.co, 4)), bias_x = rt(random_floats(s.ci, 5));
  std::vector<double> y(ny), gx(nx), gw(nw);
  for (int64_t i = 0; i < ny; ++i) y[i] = bias[(i / vol(s.out)) % s.co];
  for (int64_t i = 0; i < nx; ++i) gx[i] = bias_x[(i / vol(s.in)) % s.ci];
  for_each_term(s, [&](int64_t xo, int64_t yo, int64_t wo) {
    y[yo] += double(x[xo]) * w[wo];
    gx[xo] += double(gy[yo]) * w[wo];
    gw[wo] += double(gy[yo]) * x[xo];
  });
  double tol = dt == DType::f16 ? 1e-2 : 1e-5;
  Buffer bx = up(x), bw = up(w), bgy = up(gy), bb = up(bias), bbx = up(bias_x);
  Buffer by(dev, ny * itemsize(dt) + 4), bgx(dev, nx * itemsize(dt) + 4),
      bgw(dev, nw * itemsize(dt) + 4);
  ops::conv_forward(dev, dt, bx.address(), bw.address(), bb.address(), by.address(), s);
  ops::conv_data_grad(dev, dt, bgy.address(), bw.address(), bbx.address(), bgx.address(), s);
  ops::conv_weight_grad(dev, dt, bx.address(), bgy.address(), bgw.address(), s);
  expect_close(rd(by, ny), y, tol, tol * 4, "forward");
  expect_close(rd(bgx, nx), gx, tol, tol * 4, "data grad");
  expect_close(rd(bgw, nw), gw, tol, tol * 20, "weight grad");
}

ConvShape shape2d(int64_t n, int64_t ci, int64_t co, int64_t g, int64_t h, int64_t w, int64_t k,
                  int64_t stride, int64_t pad, int64_t dil) {
  ConvShape s;
  s.n = n, s.ci = ci, s.co = co, s.groups = g;
  s.in[1] = h, s.in[2] = w;
  s.kernel[1] = s.kernel[2] = k;
  s.stride[1] = s.stride[2] = stride;
  s.pad[1] = s.pad[2] = pad;
  s.dilation[1] = s.dilation[2] = dil;
  return s;
}

TEST_F(ConvTest, Float32Conv2d) {
  check(dev(), shape2d(2, 3, 4, 1, 7, 6, 3, 1, 1, 1), DType::f32);
  check(dev(), shape2d(2, 4, 6, 2, 9, 8, 3, 2, 0, 1), DType::f32);
  check(dev(), shape2d(1, 3, 2, 1, 9, 9, 3, 1, 2, 2), DType::f32);
  check(dev(), shape2d(2, 4, 4, 4, 6, 7, 5, 2, 2, 1), DType::f32);  // depthwise
}

TEST_F(ConvTest, ChannelTilesWithRemainders) {
  check(dev(), shape2d(1, 9, 10, 1, 5, 6, 3, 1, 1, 1), DType::f32);   // tiles of 8: 8 + 1, 8 + 2
  check(dev(), shape2d(2, 16, 20, 2, 5, 5, 3, 2, 1, 1), DType::f32);  // per group: 8 in, 10 out
  check(dev(), shape2d(1, 5, 6, 1, 4, 4, 1, 1, 0, 1), DType::f32);    // tiles of 4
}

TEST_F(ConvTest, Float32Conv1dAnd3d) {
  ConvShape s;
  s.n = 2, s.ci = 3, s.co = 2, s.spatial = 1;
  s.in[2] = 13, s.kernel[2] = 4, s.stride[2] = 3, s.pad[2] = 1;
  check(dev(), s, DType::f32);
  ConvShape t;
  t.n = 1, t.ci = 2, t.co = 3, t.spatial = 3;
  for (int d = 0; d < 3; ++d) t.in[d] = 4 + d, t.kernel[d] = 2 + d % 2, t.pad[d] = d % 2;
  t.stride[1] = 2, t.dilation[0] = 2;
  check(dev(), t, DType::f32);
}

TEST_F(ConvTest, Float16) {
  check(dev(), shape2d(2, 3, 4, 1, 6, 5, 3, 1, 1, 1), DType::f16);
  check(dev(), shape2d(1, 4, 4, 2, 7, 7, 3, 2, 1, 2), DType::f16);
}

// The implicit GEMM's weight grad with a long K (images x positions) and few output
// tiles: K slices write partial sums that a second pass adds.
TEST_F(ConvTest, WeightGradSplitK) {
  const ConvShape s = shape2d(4, 8, 12, 1, 24, 24, 3, 1, 1, 1);
  check(dev(), s, DType::f32);
  check(dev(), shape2d(2, 16, 16, 2, 20, 20, 3, 1, 1, 1), DType::f32);
  check(dev(), s, DType::f16);
  ConvShape full = s;
  full.out[1] = full.out[2] = 24;
  Buffer bx(dev(), random_floats(4 * 8 * 24 * 24, 1)), bgy(dev(), random_floats(4 * 12 * 576, 2));
  Buffer bgw(dev(), 12 * 8 * 9 * 4);
  dev().stream().synchronize();
  const uint64_t before = dev().stream().dispatch_count();
  ops::conv_weight_grad(dev(), DType::f32, bx.address(), bgy.address(), bgw.address(), full);
  EXPECT_EQ(dev().stream().dispatch_count() - before, 2u);  // the slices, then their sum
}

// Data grads of strided, undilated convolutions run one GEMM per phase (conv_gemm.comp
// mode 3): kernels smaller than the stride (phases that receive nothing), strides
// that do not divide the size, padding beyond the stride, mixed and 3-d strides.
TEST_F(ConvTest, StridedDataGradByPhases) {
  for (int tile : {32, 64, 128}) {
    ops::set_gemm_tile(tile);
    check(dev(), shape2d(2, 8, 16, 1, 9, 10, 1, 2, 0, 1), DType::f32);  // 1x1 / 2
    check(dev(), shape2d(1, 8, 9, 1, 11, 13, 7, 2, 3, 1), DType::f32);  // the stem's 7x7 / 2
    check(dev(), shape2d(2, 12, 8, 1, 10, 9, 2, 3, 0, 1), DType::f32);  // 2x2 / 3
    check(dev(), shape2d(1, 16, 16, 2, 8, 8, 3, 2, 4, 1), DType::f32);  // pad 4 > stride
    ConvShape m = shape2d(2, 8, 10, 1, 9, 7, 3, 1, 1, 1);
    m.stride[1] = 2;  // stride (2, 1)
    check(dev(), m, DType::f32);
    ConvShape t;
    t.n = 1, t.ci = 8, t.co = 8, t.spatial = 3;
    for (int d = 0; d < 3; ++d) t.in[d] = 5 + d, t.kernel[d] = 3, t.pad[d] = 1, t.stride[d] = 2;
    check(dev(), t, DType::f32);
    check(dev(), shape2d(2, 8, 12, 1, 9, 9, 3, 2, 1, 1), DType::f16);
  }
  ops::set_gemm_tile(0);
}

// Pointwise convolutions (1 x 1, stride 1, no padding, one group) run forward and data
// grad as batched GEMMs; grouped, strided or padded 1 x 1 ones stay on the conv kernels.
TEST_F(ConvTest, PointwiseOnGemm) {
  check(dev(), shape2d(3, 24, 40, 1, 5, 7, 1, 1, 0, 1), DType::f32);
  check(dev(), shape2d(2, 5, 3, 1, 4, 4, 1, 1, 0, 1), DType::f32);  // few channels
  check(dev(), shape2d(2, 16, 8, 1, 6, 6, 1, 1, 0, 1), DType::f16);
  check(dev(), shape2d(2, 16, 8, 2, 6, 6, 1, 1, 0, 1), DType::f32);  // groups: conv kernel
  check(dev(), shape2d(1, 16, 8, 1, 5, 5, 1, 1, 1, 1), DType::f32);  // padded: conv kernel
  ConvShape s;
  s.n = 2, s.ci = 9, s.co = 12, s.spatial = 1, s.in[2] = 17;
  check(dev(), s, DType::f32);
}

// The 64 x 64 tiles (256 threads, 4 x 4 each) that GPUs get for large convolutions, and
// the 128 x 128 ones (8 x 8 each) taken only when forced.
TEST_F(ConvTest, LargeImplicitGemmTiles) {
  for (int tile : {64, 128}) {
    ops::set_gemm_tile(tile);
    check(dev(), shape2d(2, 16, 70, 1, 9, 8, 3, 1, 1, 1), DType::f32);
    check(dev(), shape2d(1, 40, 36, 2, 7, 7, 3, 2, 1, 1), DType::f32);
    check(dev(), shape2d(4, 8, 12, 1, 24, 24, 3, 1, 1, 1), DType::f32);  // with split-K
    check(dev(), shape2d(2, 16, 20, 1, 6, 6, 3, 1, 1, 1), DType::f16);
    check(dev(), shape2d(1, 136, 130, 1, 12, 12, 3, 1, 1, 1), DType::f32);  // > 128 rows
  }
  ops::set_gemm_tile(0);
}

TEST_F(ConvTest, RejectsBadGroups) {
  EXPECT_THROW(
      ops::conv_forward(dev(), DType::f32, 0, 0, 0, 0, shape2d(1, 3, 4, 2, 5, 5, 3, 1, 0, 1)),
      Error);
}

}  // namespace
}  // namespace vkml::test
