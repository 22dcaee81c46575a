// Batched strided GEMM against a double-precision C++ reference.
#include <cmath>
#include <string>
#include <tuple>

#include "vkml/ops/gemm_coopmat.h"
#include "vkml/ops/matmul.h"
#include "vkml/runtime/shader_registry.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using MatmulTest = VkmlTest;

enum class BiasKind { None, Full, Row, Column };

struct GemmCase {
  int64_t batch, m, n, k;
  bool ta = false, tb = false, tc = false;  // operands stored transposed
  bool b_shared = false;                    // one B for every batch (batch stride 0)
  BiasKind bias = BiasKind::None;
  float alpha = 1.0f, beta = 0.0f;
  bool nan_bias = false;
  int64_t offset = 0;  // operands start this many elements into their buffers
};

std::string describe(const GemmCase& c) {
  return "batch=" + std::to_string(c.batch) + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + (c.ta ? " ta" : "") +
         (c.tb ? " tb" : "") + (c.tc ? " tc" : "") + (c.b_shared ? " b_shared" : "") +
         " bias=" + std::to_string(int(c.bias)) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta);
}

void run_case(Device& dev, const GemmCase& c, DType dt) {
  SCOPED_TRACE(describe(c) + " " + dtype_name(dt));
  const int64_t B = c.batch, M = c.m, N = c.n, K = c.k;
  const int64_t b_count = c.b_shared ? 1 : B;
  auto a = random_floats(B * M * K, 1);
  auto b = random_floats(b_count * K * N, 2);
  int64_t bias_size = c.bias == BiasKind::Full     ? B * M * N
                      : c.bias == BiasKind::Row    ? N
                      : c.bias == BiasKind::Column ? M
                                                   : 1;
  auto bias = random_floats(bias_size, 3);
  if (c.nan_bias) bias.assign(bias_size, NAN);
  // The reference sees what the GPU sees.
  a = stored_as(dt, a);
  b = stored_as(dt, b);
  if (!c.nan_bias) bias = stored_as(dt, bias);

  ops::GemmArgs g;
  g.dtype = dt;
  g.batch = B;
  g.m = M;
  g.n = N;
  g.k = K;
  // A: [B, M, K] or stored as [B, K, M]; element (i, kk) at i*a_row + kk*a_col.
  g.a_batch = M * K;
  g.a_row = c.ta ? 1 : K;
  g.a_col = c.ta ? M : 1;
  g.b_batch = c.b_shared ? 0 : K * N;
  g.b_row = c.tb ? 1 : N;
  g.b_col = c.tb ? K : 1;
  g.c_batch = M * N;
  g.c_row = c.tc ? 1 : N;
  g.c_col = c.tc ? M : 1;
  switch (c.bias) {
    case BiasKind::Full:
      g.bias_batch = M * N, g.bias_row = N, g.bias_col = 1;
      break;
    case BiasKind::Row:
      g.bias_row = 0, g.bias_col = 1;
      break;
    case BiasKind::Column:
      g.bias_row = 1, g.bias_col = 0;
      break;
    default:
      break;
  }
  g.alpha = c.alpha;
  g.beta = c.beta;

  // Lay the host data out in the storage order the strides describe.
  auto store = [&](const std::vector<float>& logical, int64_t batches, int64_t rows, int64_t cols,
                   int64_t rs, int64_t cs) {
    std::vector<float> s(logical.size());
    for (int64_t q = 0; q < batches; ++q)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          s[q * rows * cols + i * rs + j * cs] = logical[(q * rows + i) * cols + j];
    return s;
  };
  auto sa = store(a, B, M, K, g.a_row, g.a_col);
  auto sb = store(b, b_count, K, N, g.b_row, g.b_col);
  auto upload = [&](std::vector<float> v) {
    v.insert(v.begin(), size_t(c.offset), 0.0f);
    return upload_as(dev, dt, v);
  };
  Buffer ba = upload(sa), bb = upload(sb), bbias = upload(bias);
  Buffer bc(dev, std::max<int64_t>(B * M * N, 1) * itemsize(dt));
  const uint64_t skip = uint64_t(c.offset) * itemsize(dt);
  g.a = ba.address() + skip;
  g.b = bb.address() + skip;
  g.c = bc.address();
  g.bias = c.bias == BiasKind::None ? 0 : bbias.address() + skip;
  ops::gemm(dev, g);

  std::vector<double> want(B * M * N);
  for (int64_t q = 0; q < B; ++q)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < K; ++kk)
          acc +=
              double(a[(q * M + i) * K + kk]) * double(b[((c.b_shared ? 0 : q) * K + kk) * N + j]);
        double v = c.alpha * acc;
        if (c.beta != 0.0f && c.bias != BiasKind::None) {
          double bv = c.bias == BiasKind::Full  ? bias[(q * M + i) * N + j]
                      : c.bias == BiasKind::Row ? bias[j]
                                                : bias[i];
          v += c.beta * bv;
        }
        // C is stored as the strides say; compare in that order.
        want[q * M * N + i * g.c_row + j * g.c_col] = v;
      }
  const std::vector<float> got = read_as(dt, bc, size_t(B * M * N));
  if (dt != DType::f32)
    for (auto& w : want) w = stored_as(dt, {float(w)})[0];
  // One rounding of the result to the storage type, beyond fp32 accumulation.
  double tol = dt == DType::f16 ? 4e-3 : dt == DType::bf16 ? 1.6e-2 : 1e-5;
  expect_close(got, want, tol, tol * std::sqrt(double(std::max<int64_t>(K, 1))), "C");
}

TEST_F(MatmulTest, ShapesAndEdges) {
  const int64_t shapes[][3] = {{1, 1, 1},    {7, 13, 5},   {64, 64, 64},  {65, 130, 33},
                               {100, 3, 70}, {3, 100, 17}, {1, 200, 300}, {33, 31, 16}};
  for (auto& s : shapes) run_case(dev(), GemmCase{1, s[0], s[1], s[2]}, DType::f32);
}

TEST_F(MatmulTest, TransposedOperands) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool tc : {false, true}) {
        GemmCase c{2, 37, 45, 29};
        c.ta = ta, c.tb = tb, c.tc = tc;
        run_case(dev(), c, DType::f32);
      }
}

TEST_F(MatmulTest, AlphaBetaAndBias) {
  GemmCase c{3, 20, 24, 10};
  c.alpha = 0.5f;
  c.beta = 2.0f;
  for (BiasKind k : {BiasKind::Full, BiasKind::Row, BiasKind::Column}) {
    c.bias = k;
    run_case(dev(), c, DType::f32);
  }
  // beta == 0 ignores the bias entirely, even NaNs in it.
  c.bias = BiasKind::Full;
  c.beta = 0.0f;
  c.nan_bias = true;
  run_case(dev(), c, DType::f32);
}

TEST_F(MatmulTest, ZeroK) {
  GemmCase c{2, 5, 6, 0};
  run_case(dev(), c, DType::f32);  // C = 0
  c.bias = BiasKind::Row;
  c.beta = 3.0f;
  c.alpha = 2.0f;
  run_case(dev(), c, DType::f32);  // C = beta * bias
}

TEST_F(MatmulTest, EmptyOutputIsANoOp) {
  for (GemmCase c : {GemmCase{0, 4, 4, 4}, GemmCase{2, 0, 4, 4}, GemmCase{2, 4, 0, 4}})
    run_case(dev(), c, DType::f32);
}

TEST_F(MatmulTest, BatchedWithSharedB) {
  GemmCase c{5, 17, 9, 23};
  c.b_shared = true;
  c.bias = BiasKind::Row;
  c.beta = 1.0f;
  run_case(dev(), c, DType::f32);
}

TEST_F(MatmulTest, LargeTiles) {
  // Enough output tiles to pick the 64x64 configuration, with ragged edges.
  run_case(dev(), GemmCase{8, 129, 130, 40}, DType::f32);
  GemmCase t{8, 129, 130, 40};
  t.ta = true;
  t.tb = true;
  run_case(dev(), t, DType::f32);
}

TEST_F(MatmulTest, ManyBatches) {
  run_case(dev(), GemmCase{66000, 1, 2, 1}, DType::f32);  // more tiles than one grid dimension
}

TEST_F(MatmulTest, Float16) {
  run_case(dev(), GemmCase{1, 33, 47, 70}, DType::f16);
  GemmCase c{3, 20, 24, 10};
  c.ta = true;
  c.bias = BiasKind::Column;
  c.beta = -1.0f;
  run_case(dev(), c, DType::f16);
  run_case(dev(), GemmCase{8, 129, 130, 40}, DType::f16);
}

// Four-element loads along each operand's contiguous side: row strides that are
// multiples of 4 with ragged tiles in every direction, every operand layout, and
// starts off by 1-3 elements (element-wise loads) or by 4 (quads again).
TEST_F(MatmulTest, QuadLoadsAndTheirEdges) {
  for (int64_t offset : {0, 1, 2, 3, 4})
    for (bool t : {false, true}) {
      GemmCase c{2, 68, 132, 36};
      c.ta = t;
      c.tb = !t;
      c.offset = offset;
      run_case(dev(), c, DType::f32);
    }
  GemmCase big{1, 132, 200, 44};
  run_case(dev(), big, DType::f32);
  run_case(dev(), big, DType::f16);
  big.ta = big.tb = true;
  run_case(dev(), big, DType::f16);
  ops::set_gemm_tile(128);
  run_case(dev(), big, DType::f32);
  ops::set_gemm_tile(0);
}

// The 128 x 128 tile (8 x 8 outputs per thread), taken only when forced
// (TORCH_VKML_GEMM_TILE=128) until a GPU shows it faster.
TEST_F(MatmulTest, HugeTiles) {
  ops::set_gemm_tile(128);
  for (bool t : {false, true}) {
    GemmCase c{2, 257, 131, 40};  // ragged in m, n and k
    c.ta = c.tb = t;
    c.bias = BiasKind::Row;
    c.beta = 0.5f;
    run_case(dev(), c, DType::f32);
  }
  run_case(dev(), GemmCase{1, 130, 200, 33}, DType::f16);
  GemmCase split{1, 40, 60, 3000};  // one tile, deep K: split into slices
  run_case(dev(), split, DType::f32);
  ops::set_gemm_tile(0);
}

// The sweep's tiles (set_gemm_config): other shapes of thread grid and staging compute
// the same products, through every output chunk of the shared-memory epilogue; tiles
// the shader cannot run are refused.
TEST_F(MatmulTest, SweepConfigs) {
  const int32_t configs[][5] = {{128, 64, 16, 256, 4},  {64, 128, 16, 256, 4}, {64, 64, 16, 128, 4},
                                {128, 128, 16, 256, 8}, {64, 64, 8, 64, 8},    {32, 64, 16, 64, 8}};
  for (const auto& t : configs) {
    SCOPED_TRACE(testing::Message()
                 << t[0] << "x" << t[1] << "x" << t[2] << " " << t[3] << " " << t[4]);
    ops::set_gemm_config(t[0], t[1], t[2], t[3], t[4]);
    GemmCase c{2, 257, 131, 40};  // ragged in m, n and k
    c.ta = true;
    c.bias = BiasKind::Row;
    c.beta = 0.5f;
    run_case(dev(), c, DType::f32);
    run_case(dev(), GemmCase{1, 40, 60, 3000}, DType::f32);  // split K
  }
  ops::set_gemm_config(0, 0, 0, 0, 0);
  EXPECT_THROW(ops::set_gemm_config(64, 64, 16, 256, 3), Error);  // TN not whole vec4s
  EXPECT_THROW(ops::set_gemm_config(64, 64, 16, 64, 16), Error);  // more than two vec4s of TN
  EXPECT_THROW(ops::set_gemm_config(64, 64, 4, 256, 4), Error);   // a slice short of a quad each
  EXPECT_THROW(ops::set_gemm_config(64, 64, 16, 100, 4), Error);  // outputs not per thread
}

// The matrix-unit kernel (ops/gemm_coopmat.h), for fp16 and bf16, in two modes.
// Emulated: plain arithmetic in place of the matrix units, with the real kernel's
// tiling, staging, vector loads, edges, epilogue and split-K, and its start-up check,
// on any device. Auto: the real kernel where the device offers matrix units for the
// dtype and the build has the shader (fp16: Mesa 26's lavapipe, see
// scripts/lavapipe_next.sh; bf16: no device we have); elsewhere the same cases must
// run on the scalar kernel, and the status must say why.
class CoopmatKernel : public MatmulTest,
                      public testing::WithParamInterface<std::tuple<ops::CoopmatMode, DType>> {
 protected:
  void SetUp() override {
    MatmulTest::SetUp();
    saved_ = ops::coopmat_mode();
    ops::set_coopmat_mode(mode());
  }
  void TearDown() override {
    if (expects_kernel()) EXPECT_STREQ(status(), expected_status());
    ops::set_coopmat_mode(saved_);
    MatmulTest::TearDown();
  }
  static ops::CoopmatMode mode() { return std::get<0>(GetParam()); }
  static DType dtype() { return std::get<1>(GetParam()); }
  const char* status() { return ops::coopmat_status(dev(), dtype()); }
  static bool shader_built() {
    return shader_blob(dtype() == DType::bf16 ? Shader::gemm_coopmat_bf16
                                              : Shader::gemm_coopmat_f16);
  }
  bool offered() {
    const DeviceInfo& info = dev().info();
    return (dtype() == DType::bf16 ? info.coopmat_bf16_m : info.coopmat_m) != 0;
  }
  bool expects_kernel() {
    if (mode() == ops::CoopmatMode::kEmulated)
      return dtype() == DType::f16 || dev().info().supports_int16;
    return offered() && shader_built();
  }
  const char* expected_status() {
    if (mode() == ops::CoopmatMode::kEmulated) return expects_kernel() ? "emulated" : "unsupported";
    if (offered() && !shader_built()) return "not built";
    return offered() ? "active" : "unsupported";
  }
  bool chosen(const GemmCase& c) {
    ops::GemmArgs g;
    g.dtype = dtype();
    g.batch = c.batch, g.m = c.m, g.n = c.n, g.k = c.k;
    g.a_row = c.k, g.a_col = 1, g.b_row = c.n, g.b_col = 1;
    return ops::coopmat_kernel(dev(), g).pipeline != VK_NULL_HANDLE;
  }
  void run(const GemmCase& c) {
    ASSERT_EQ(chosen(c), expects_kernel()) << describe(c) << " status " << status();
    run_case(dev(), c, dtype());
  }
  ops::CoopmatMode saved_ = ops::CoopmatMode::kAuto;
};

INSTANTIATE_TEST_SUITE_P(Modes, CoopmatKernel,
                         testing::Combine(testing::Values(ops::CoopmatMode::kEmulated,
                                                          ops::CoopmatMode::kAuto),
                                          testing::Values(DType::f16, DType::bf16)),
                         [](const testing::TestParamInfo<std::tuple<ops::CoopmatMode, DType>>& i) {
                           return std::string(std::get<0>(i.param) == ops::CoopmatMode::kEmulated
                                                  ? "Emulated"
                                                  : "Real") +
                                  (std::get<1>(i.param) == DType::bf16 ? "BF16" : "FP16");
                         });

TEST_P(CoopmatKernel, ChosenForProductsOfSize) {
  EXPECT_EQ(chosen(GemmCase{1, 64, 64, 64}), expects_kernel());
  EXPECT_FALSE(chosen(GemmCase{1, 16, 64, 64}));  // too small a side
  EXPECT_FALSE(chosen(GemmCase{1, 64, 64, 8}));
  ops::GemmArgs g;
  g.dtype = DType::f32, g.m = g.n = g.k = 64;
  EXPECT_EQ(ops::coopmat_kernel(dev(), g).pipeline, VK_NULL_HANDLE);
  // Where the kernel runs, its start-up check ran and passed.
  EXPECT_STREQ(status(), expected_status());
  ops::set_coopmat_mode(ops::CoopmatMode::kOff);
  EXPECT_FALSE(chosen(GemmCase{1, 64, 64, 64}));
  EXPECT_STREQ(status(), "off");
  // TORCH_VKML_COOPMAT=fp16: bf16 off, fp16 as when on.
  ops::set_coopmat_mode(ops::CoopmatMode::kFp16Only);
  if (dtype() == DType::bf16) {
    EXPECT_FALSE(chosen(GemmCase{1, 64, 64, 64}));
    EXPECT_STREQ(status(), "off");
  } else if (mode() == ops::CoopmatMode::kAuto) {
    EXPECT_EQ(chosen(GemmCase{1, 64, 64, 64}), expects_kernel());
    EXPECT_STREQ(status(), expected_status());
  }
  ops::set_coopmat_mode(mode());
}

TEST_P(CoopmatKernel, ShapesAndRaggedEdges) {
  const int64_t shapes[][3] = {{64, 64, 64},  {32, 32, 32},  {33, 47, 70},
                               {100, 37, 33}, {65, 130, 97}, {200, 136, 72}};
  for (auto& s : shapes) run(GemmCase{1, s[0], s[1], s[2]});
}

TEST_P(CoopmatKernel, TransposedOperandsBatchedAndLargeTiles) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool tc : {false, true}) {
        GemmCase c{2, 130, 129, 67};  // 128 x 128 tiles, ragged in every direction
        c.ta = ta, c.tb = tb, c.tc = tc;
        run(c);
      }
}

TEST_P(CoopmatKernel, AlphaBetaBiasAndSharedB) {
  GemmCase c{3, 40, 36, 48};
  c.alpha = 0.5f;
  c.beta = 2.0f;
  c.b_shared = true;
  for (BiasKind k : {BiasKind::Full, BiasKind::Row, BiasKind::Column}) {
    c.bias = k;
    run(c);
  }
  c.beta = 0.0f;
  c.nan_bias = true;
  run(c);
}

TEST_P(CoopmatKernel, UnalignedOperandsLoadElementwise) {
  for (int64_t offset : {1, 2, 3}) {
    GemmCase c{2, 48, 40, 64};
    c.offset = offset;
    run(c);
    c.ta = c.tb = true;
    run(c);
  }
  run(GemmCase{1, 35, 38, 42});  // row strides not a multiple of 4
}

// The sweep knobs (TORCH_VKML_COOPMAT_BK, _TILE, _WARPS): other staging depths, forced
// tiles and eight subgroups compute the same products.
TEST_P(CoopmatKernel, OtherStagingDepthsAndTiles) {
  const ops::CoopmatTuning saved = ops::coopmat_tuning();
  for (int32_t bk : {16, 32})
    for (int32_t tile : {64, 128})
      for (int32_t warps : {4, 8}) {
        SCOPED_TRACE(testing::Message() << "bk " << bk << " tile " << tile << " warps " << warps);
        ops::set_coopmat_tuning({bk, tile, warps});
        GemmCase c{2, 130, 129, 67};
        c.ta = true;
        run(c);
        run(GemmCase{1, 50, 64, 700});  // split K: slices rounded to whole steps
        run(GemmCase{1, 35, 38, 42});   // element-wise loads
      }
  ops::set_coopmat_tuning(saved);
  EXPECT_THROW(ops::set_coopmat_tuning({24, 0}), Error);
  EXPECT_THROW(ops::set_coopmat_tuning({64, 0}), Error);  // two stages of 64 fit few devices
  EXPECT_THROW(ops::set_coopmat_tuning({32, 96}), Error);
  EXPECT_THROW(ops::set_coopmat_tuning({32, 64, 6}), Error);
}

TEST_P(CoopmatKernel, SplitK) {
  // One 64 x 64 tile and a deep K: partial sums in K slices, added by gemm.comp.
  GemmCase c{1, 50, 64, 2000};
  c.bias = BiasKind::Row;
  c.beta = 1.0f;
  run(c);
}

}  // namespace
}  // namespace vkml::test
