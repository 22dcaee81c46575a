#include "vkml/ops/gemm_bf16x3.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "vkml/ops/gemm_coopmat.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/memory.h"
#include "vkml/runtime/shader_registry.h"
#include "vkml/shaders/gemm_split_bf16_push.h"

namespace vkml::ops {

namespace {

using SplitPush = gemm_split_bf16_detail::Push;

// One operand's pieces into `dst`: its rows x cols (strided), each piece out_rows x
// out_cols (zeros past them) at dst_row elements a row, pieces piece_stride apart and
// images dst_batch apart.
void split(Device& dev, const GemmArgs& g, bool a, uint64_t dst, int64_t rows, int64_t cols,
           int64_t out_rows, int64_t out_cols, int64_t dst_row, int64_t dst_batch,
           int64_t piece_stride, uint32_t pieces, uint32_t lows) {
  SplitPush p{};
  p.src = a ? g.a : g.b;
  p.dst = dst;
  p.src_batch = a ? g.a_batch : g.b_batch;
  p.rows = uint32_t(rows);
  p.cols = uint32_t(cols);
  p.batch = uint32_t(g.batch);
  p.out_rows = uint32_t(out_rows);
  p.out_cols = uint32_t(out_cols);
  p.src_row = int32_t(a ? g.a_row : g.b_row);
  p.src_col = int32_t(a ? g.a_col : g.b_col);
  p.dst_row = uint32_t(dst_row);
  p.dst_batch = uint32_t(dst_batch);
  p.piece_stride = uint32_t(piece_stride);
  p.pieces = pieces;
  p.lows = lows;
  const int64_t sizes[3] = {g.batch, rows, cols};
  const int64_t strides[3] = {p.src_batch, p.src_row, p.src_col};
  Access access;
  access.read(span_of(p.src, 4, 3, sizes, strides));
  access.write(span_elems(dst, g.batch * dst_batch, 2));
  dispatch_1d(dev, dev.pipelines().get(Shader::gemm_split_bf16), &p, sizeof(p),
              uint64_t(g.batch * out_rows * out_cols), GEMM_SPLIT_BF16_WG, &access);
}

int64_t round8(int64_t v) { return (v + 7) / 8 * 8; }

std::atomic<bool>& fp32_on_bf16_setting() {
  static std::atomic<bool> on = [] {
    const char* v = std::getenv("TORCH_VKML_FP32_ON_BF16");
    return v && std::string(v) == "1";
  }();
  return on;
}

}  // namespace

bool fp32_on_bf16_units() { return fp32_on_bf16_setting().load(); }
void set_fp32_on_bf16_units(bool on) { fp32_on_bf16_setting().store(on); }

bool gemm_on_bf16_units(Device& dev, const GemmArgs& g) {
  if (g.dtype != DType::f32 || g.precision == Fp32Precision::kHighest || g.f32_result ||
      !fp32_on_bf16_units())
    return false;
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1) return false;
  const int64_t terms = g.precision == Fp32Precision::kHigh ? 3 : 1;
  // The bf16 product over the tripled K: A' [batch][m][terms kp], B' [batch][terms kp][np],
  // each piece kp = k rounded up to 8 deep (zeros past k), B's rows np = n rounded up
  // (columns past n never read), so that both load 16 bytes at a time.
  const int64_t kp = round8(g.k), np = round8(g.n);
  GemmArgs h = g;
  h.dtype = DType::bf16;
  h.f32_result = true;
  h.k = terms * kp;
  h.a_batch = g.m * h.k, h.a_row = h.k, h.a_col = 1;
  h.b_batch = h.k * np, h.b_row = np, h.b_col = 1;
  const int64_t a_elems = g.batch * h.a_batch, b_elems = g.batch * h.b_batch;
  // The pieces, and the fp32 partial sums the product leaves (32-bit indexing).
  if (a_elems >= (int64_t(1) << 31) || b_elems >= (int64_t(1) << 31) ||
      g.batch * g.m * g.n >= (int64_t(1) << 31))
    return false;
  h.a = h.b = 0;  // aligned, as the allocations will be: the same kernel choice
  if (!coopmat_kernel(dev, h).pipeline) return false;
  Allocation a = dev.memory().allocate(uint64_t(a_elems) * 2);
  Allocation b = dev.memory().allocate(uint64_t(b_elems) * 2);
  h.a = a.address;
  h.b = b.address;
  // A as [hi | hi | lo] along k, B as [hi; lo; hi] along k: hi hi + hi lo + lo hi.
  split(dev, g, true, h.a, g.m, g.k, g.m, kp, h.k, h.a_batch, kp, uint32_t(terms),
        terms == 3 ? 0b100u : 0u);
  split(dev, g, false, h.b, g.k, g.n, kp, g.n, np, h.b_batch, kp * np, uint32_t(terms),
        terms == 3 ? 0b010u : 0u);
  gemm(dev, h);
  // The stream orders later work after the product: the pieces are freed at once.
  dev.memory().free(a.address);
  dev.memory().free(b.address);
  return true;
}

}  // namespace vkml::ops
