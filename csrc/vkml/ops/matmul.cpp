#include "vkml/ops/matmul.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/gemm_bf16x3.h"
#include "vkml/ops/gemm_coopmat.h"
#include "vkml/ops/gemm_quads.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"

namespace vkml::ops {

namespace {

using namespace gemm_detail;

// Tile configurations (the specialization constants of shaders/gemm.comp):
// BM x BN outputs per workgroup, BK-deep K slices, the workgroup size, and TN:
// each thread computes BM * BN / threads outputs, TN wide. The float variants read
// shared memory in vec4s: 4 x 4 outputs per thread take two reads per 16
// multiply-adds, the huge tile's 8 x 8 four per 64, which is what keeps a GPU's FMA
// units ahead of its shared memory (the huge tile's first form, 16 x 4 with scalar
// reads, ran ten times slower than 64 x 64 on the H200).
struct Tile {
  int32_t bm, bn, bk, threads, tn;
};
constexpr Tile kSmall{32, 32, 16, 64, 4};
constexpr Tile kLarge{64, 64, 16, 256, 4};
constexpr Tile kHuge{128, 128, 8, 256, 8};
constexpr Tile kTiles[] = {kSmall, kLarge, kHuge};  // index: the pipeline slot's tile class

int tile_from_env() {
  const char* v = std::getenv("TORCH_VKML_GEMM_TILE");
  return v ? std::atoi(v) : 0;
}
std::atomic<int>& forced_tile() {
  static std::atomic<int> tile{tile_from_env()};
  return tile;
}

// Shared memory of gemm.comp: two stages of BK rows of A and B, padded by one vec4
// (float variants) or one int64 (integer ones).
uint32_t shared_bytes(const Tile& t, size_t acc_bytes) {
  const int32_t pad = acc_bytes == 4 ? 4 : 1;
  return uint32_t(2 * t.bk * (t.bm + pad + t.bn + pad) * acc_bytes);
}

// Whether gemm.comp's float variants run this tile: whole vec4 groups of rows and
// columns per thread (one or two column groups), whole quads of each staged slice per thread, and
// an output chunk (4 * NTY rows by NTX quads) whose halves fit the A and B stages it reuses.
constexpr bool float_tile_valid(const Tile& t) {
  if (t.bm <= 0 || t.bn <= 0 || t.bk <= 0 || t.threads <= 0 || t.tn <= 0) return false;
  if (t.bm % 4 || t.bn % 4 || t.bk % 4 || t.bn % t.tn) return false;
  if (t.tn != 4 && t.tn != 8) return false;
  if (int64_t(t.bm) * t.bn % (int64_t(t.threads) * t.tn)) return false;
  const int64_t tm = int64_t(t.bm) * t.bn / (int64_t(t.threads) * t.tn);
  if (tm % 4 || t.bm % tm) return false;
  if (int64_t(t.bm) * t.bk % (4 * t.threads) || int64_t(t.bn) * t.bk % (4 * t.threads))
    return false;
  const int64_t half = 4 * (t.bm / tm) * (t.bn / t.tn) / 2;
  return half <= 2 * t.bk * (t.bm / 4 + 1) && half <= 2 * t.bk * (t.bn / 4 + 1);
}
static_assert(float_tile_valid(kSmall) && float_tile_valid(kLarge) && float_tile_valid(kHuge));

uint64_t pack_tile(const Tile& t) {
  uint64_t v = 0;
  for (int32_t f : {t.tn, t.threads, t.bk, t.bn, t.bm}) v = v << 12 | uint64_t(f);
  return v;
}
bool custom_in_range(const Tile& t) {
  return float_tile_valid(t) && t.bm < 4096 && t.bn < 4096 && t.bk < 4096 && t.threads < 4096;
}

// TORCH_VKML_GEMM_CONFIG=bm,bn,bk,threads,tn at start-up: a benchmark A/B of a whole tile.
uint64_t custom_from_env() {
  const char* v = std::getenv("TORCH_VKML_GEMM_CONFIG");
  if (!v || !*v) return 0;
  Tile t{};
  if (std::sscanf(v, "%d,%d,%d,%d,%d", &t.bm, &t.bn, &t.bk, &t.threads, &t.tn) == 5 &&
      custom_in_range(t))
    return pack_tile(t);
  std::fprintf(stderr,
               "torch-vkml: TORCH_VKML_GEMM_CONFIG=%s is not a tile gemm.comp runs; ignored\n", v);
  return 0;
}

// A whole tile for sweeps (set_gemm_config): fp32 products take it while set. Packed
// into one atomic so that a reader sees one setting; 0 when unset.
std::atomic<uint64_t>& custom_value() {
  static std::atomic<uint64_t> v{custom_from_env()};
  return v;
}
Tile custom_tile() {
  const uint64_t v = custom_value().load();
  auto field = [&](int i) { return int32_t((v >> (12 * i)) & 0xfff); };
  return {field(0), field(1), field(2), field(3), field(4)};
}
constexpr size_t kCustomClass = std::size(kTiles);

// The tile class for this product on this device: small tiles for small or
// narrow outputs and integer products (int64 staging), large ones once there
// are enough of them. Never beyond the device's limits. The huge tile is only
// taken when forced (TORCH_VKML_GEMM_TILE=128): on an H200 it ran 4096^3 at 2.2-2.3
// TFLOP/s against 24 for the large one, in its 16 x 4 and 8 x 8 forms alike, with
// direct and staged stores (before the accumulators were split, see gemm.comp).
size_t choose_tile(const Device& dev, const GemmArgs& g, bool wide) {
  const DeviceInfo& info = dev.info();
  const size_t acc = wide ? 8 : 4;
  auto fits = [&](const Tile& t) {
    return uint32_t(t.threads) <= info.max_workgroup_invocations &&
           shared_bytes(t, acc) <= info.max_shared_memory;
  };
  if (!wide && g.dtype == DType::f32 && custom_value().load() && fits(custom_tile()))
    return kCustomClass;
  if (int forced = forced_tile().load())
    for (size_t c = 0; c < std::size(kTiles); ++c)
      if (kTiles[c].bm == forced && fits(kTiles[c])) return c;
  if (wide || g.m <= 32 || g.n <= 32) return 0;
  // Split-K (launch.h) multiplies a few large tiles into enough workgroups on a GPU.
  const int64_t tiles = ceil_div(g.m, kLarge.bm) * ceil_div(g.n, kLarge.bn) * g.batch;
  const int64_t splits = gpu_choices(dev) ? k_splits(dev, tiles, g.k, g.batch * g.m * g.n) : 1;
  if (tiles * splits < 128) return 0;
  return fits(kLarge) ? 1 : 0;
}

int64_t max_offset(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return (rows - 1) * std::max<int64_t>(row_stride, 0) +
         (cols - 1) * std::max<int64_t>(col_stride, 0);
}

}  // namespace

void set_gemm_tile(int tile) { forced_tile().store(tile); }
int gemm_tile() { return forced_tile().load(); }

void set_gemm_config(int32_t bm, int32_t bn, int32_t bk, int32_t threads, int32_t tn) {
  if (bm == 0 && bn == 0 && bk == 0 && threads == 0 && tn == 0) {
    custom_value().store(0);
    return;
  }
  const Tile t{bm, bn, bk, threads, tn};
  VKML_CHECK_ARG(custom_in_range(t),
                 "gemm config: not a tile gemm.comp runs (see float_tile_valid)");
  custom_value().store(pack_tile(t));
}

void gemm(Device& dev, const GemmArgs& g) {
  const bool integer = g.dtype == DType::i64 || g.dtype == DType::i32 || g.dtype == DType::i16 ||
                       g.dtype == DType::i8 || g.dtype == DType::u8;
  const bool half = g.dtype == DType::f16 || g.dtype == DType::bf16;
  // float64 and the integers stage 8-byte elements, with no split-K or vector loads.
  const bool wide = integer || g.dtype == DType::f64;
  VKML_CHECK_ARG(g.dtype == DType::f32 || half || wide,
                 std::string("gemm: unsupported dtype ") + dtype_name(g.dtype));
  VKML_CHECK_ARG(g.dtype != DType::f64 || dev.info().supports_fp64,
                 "gemm: float64 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(g.dtype != DType::i16 || dev.info().supports_int16,
                 "gemm: int16 is not supported on " + dev.info().name);
  auto int32_range = [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; };
  VKML_CHECK_ARG(!integer || (int32_range(g.int_alpha) && int32_range(g.int_beta)),
                 "gemm: integer alpha and beta must fit in int32");
  VKML_CHECK_ARG(!half || dev.info().supports_fp16, std::string("gemm: ") + dtype_name(g.dtype) +
                                                        " is not supported on " + dev.info().name);
  VKML_CHECK_ARG(g.batch >= 0 && g.m >= 0 && g.n >= 0 && g.k >= 0, "gemm: negative size");
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  VKML_CHECK_ARG(!g.f32_result || g.dtype == DType::bf16,
                 "gemm: a float32 result is for bf16 operands");
  VKML_CHECK_ARG(!g.i32_result || g.dtype == DType::i8, "gemm: an int32 result is for i8 operands");
  const bool grouped = g.groups != GemmGroups::none;
  VKML_CHECK_ARG(!grouped || (g.group_offsets != 0 && !g.f32_result && !g.i32_result &&
                              (integer ? g.int_beta == 0 : g.beta == 0.0f)),
                 "gemm: a grouped product takes its offsets and no bias");
  // float32 on bf16 matrix units where torch.set_float32_matmul_precision allows it.
  if (!grouped && g.dtype == DType::f32 && g.precision != Fp32Precision::kHighest && g.k > 0 &&
      gemm_on_bf16_units(dev, g))
    return;
  bool bias = !grouped && (integer ? g.int_beta != 0 : g.beta != 0.0f) && g.bias != 0;
  const char* op = "gemm";
  if (g.k > 0) {
    check_32bit_indexing(g.m * g.k, max_offset(g.m, g.k, g.a_row, g.a_col), op);
    check_32bit_indexing(g.k * g.n, max_offset(g.k, g.n, g.b_row, g.b_col), op);
  }
  check_32bit_indexing(g.m * g.n, max_offset(g.m, g.n, g.c_row, g.c_col), op);
  if (bias) check_32bit_indexing(g.m * g.n, max_offset(g.m, g.n, g.bias_row, g.bias_col), op);

  const size_t tile_class = choose_tile(dev, g, wide);
  const Tile t = tile_class == kCustomClass ? custom_tile() : kTiles[tile_class];
  // fp16 products on the matrix units where the device has them.
  const CoopmatKernel coop = g.k > 0 ? coopmat_kernel(dev, g) : CoopmatKernel{};
  VKML_CHECK_ARG(!g.f32_result || coop.pipeline,
                 "gemm: a float32 result needs the matrix-unit kernel");
  const int64_t bm = coop.pipeline ? coop.bm : t.bm, bn = coop.pipeline ? coop.bn : t.bn;
  // Grouped rows or columns: numbered group by group (gemm_groups.glsl), each group's
  // last tile ragged.
  const int64_t tiles_m = ceil_div(g.m, bm) + (g.groups == GemmGroups::m ? g.batch : 0);
  const int64_t tiles_n = ceil_div(g.n, bn) + (g.groups == GemmGroups::n ? g.batch : 0);
  int64_t tiles =
      tiles_m * tiles_n * (g.groups == GemmGroups::m || g.groups == GemmGroups::n ? 1 : g.batch);
  VKML_CHECK_ARG(tiles < (int64_t(1) << 32), "gemm: too many output tiles");

  Push p{};
  p.a = g.a;
  p.b = g.b;
  p.c = g.c;
  p.bias = grouped ? g.group_offsets : (bias ? g.bias : 0);
  p.a_batch = g.a_batch;
  p.b_batch = g.b_batch;
  p.c_batch = g.c_batch;
  p.bias_batch = g.bias_batch;
  p.a_row = int32_t(g.a_row);
  p.a_col = int32_t(g.a_col);
  p.b_row = int32_t(g.b_row);
  p.b_col = int32_t(g.b_col);
  p.c_row = int32_t(g.c_row);
  p.c_col = int32_t(g.c_col);
  p.bias_row = int32_t(g.bias_row);
  p.bias_col = int32_t(g.bias_col);
  p.m = uint32_t(g.m);
  p.n = uint32_t(g.n);
  p.k = uint32_t(g.k);
  p.batch = uint32_t(g.batch);
  if (integer) {
    int32_t a = int32_t(g.int_alpha), b = int32_t(g.int_beta);
    std::memcpy(&p.alpha, &a, sizeof(a));
    std::memcpy(&p.beta, &b, sizeof(b));
  } else {
    p.alpha = g.alpha;
    p.beta = g.beta;
  }
  p.flags = (bias ? GEMM_BIAS : 0) | (g.a_row == 1 && g.a_col != 1 ? GEMM_A_MFAST : 0) |
            (g.b_row == 1 && g.b_col != 1 ? GEMM_B_KFAST : 0) |
            (coop.pipeline || wide ? 0 : quad_flags(g, itemsize(g.dtype)));
  if (grouped)
    p.flags |= g.groups == GemmGroups::m   ? GEMM_GROUP_M
               : g.groups == GemmGroups::n ? GEMM_GROUP_N
                                           : GEMM_GROUP_K;

  // Split-K (launch.h) for float products: the partial sums are fp32.
  const int64_t splits = wide || grouped ? 1 : k_splits(dev, tiles, g.k, g.batch * g.m * g.n);
  // dtype, tile class, int32 result
  static const PipelineSlots slots({16, uint32_t(std::size(kTiles)), 2});
  // C's dtype: the operands', or float32 for f32_result (the sum pass writes it), or int32.
  const DType c_dtype = g.f32_result ? DType::f32 : g.i32_result ? DType::i32 : g.dtype;
  auto make_scalar = [&](DType dtype, const Tile& tile) {
    return dev.pipelines().get(g.i32_result ? shaders::gemm_i32(dtype) : shaders::gemm(dtype),
                               {tile.bm, tile.bn, tile.bk, tile.threads, tile.tn});
  };
  auto scalar_pipeline = [&](DType dtype, size_t c) {
    if (c == kCustomClass) return make_scalar(dtype, t);  // a sweep's: not kept in the slots
    return slots.get(dev, {uint32_t(dtype), uint32_t(c), uint32_t(g.i32_result)},
                     [&] { return make_scalar(dtype, kTiles[c]); });
  };
  const VkPipeline pipeline = coop.pipeline ? coop.pipeline : scalar_pipeline(g.dtype, tile_class);
  auto span = [&](uint64_t address, int64_t rows, int64_t cols, int64_t sb, int64_t sr, int64_t sc,
                  DType dtype) {
    const int64_t sizes[3] = {g.batch, rows, cols}, strides[3] = {sb, sr, sc};
    return span_of(address, itemsize(dtype), 3, sizes, strides);
  };
  const Span c_span = span(g.c, g.m, g.n, g.c_batch, g.c_row, g.c_col, c_dtype);
  const Span bias_span = span(g.bias, g.m, g.n, g.bias_batch, g.bias_row, g.bias_col, c_dtype);
  auto read_operands = [&](Access& access) {
    if (g.k > 0) {
      access.read(span(g.a, g.m, g.k, g.a_batch, g.a_row, g.a_col, g.dtype));
      access.read(span(g.b, g.k, g.n, g.b_batch, g.b_row, g.b_col, g.dtype));
    }
  };
  // An f32_result product leaves the matrix-unit kernel as fp32 partial sums (one slice
  // at least), which the sum pass writes to C.
  if (splits == 1 && !g.f32_result) {
    Access access;
    access.write(c_span);
    read_operands(access);
    if (bias) access.read(bias_span);
    if (grouped) access.read(span_elems(g.group_offsets, g.batch, 4));
    dispatch_groups(dev, pipeline, &p, sizeof(p), uint64_t(tiles), &access);
    return;
  }
  // Partial sums into scratch, then one pass that adds them up into C. The
  // stream orders later work after both, so the scratch is freed at once.
  const int64_t outputs = g.batch * g.m * g.n;
  const uint64_t scratch_bytes = uint64_t(splits * outputs) * 4;
  Allocation scratch = dev.memory().allocate(scratch_bytes);
  Push partial = p;
  partial.c = scratch.address;
  partial.flags = (p.flags & ~GEMM_BIAS) | GEMM_SPLIT;
  partial.splits = uint32_t(splits);
  Access first;
  first.write(span_elems(scratch.address, splits * outputs, 4));
  read_operands(first);
  dispatch_groups(dev, pipeline, &partial, sizeof(partial), uint64_t(tiles * splits), &first);

  // The sum pass is gemm.comp's, whichever kernel made the partials.
  const size_t sum_class = coop.pipeline ? 0 : tile_class;
  Push sum = p;
  sum.a = scratch.address;
  sum.flags = p.flags | GEMM_SPLIT_SUM;
  sum.splits = uint32_t(splits);
  Access second;
  second.read(span_elems(scratch.address, splits * outputs, 4));
  second.write(c_span);
  if (bias) second.read(bias_span);
  dispatch_1d(dev, scalar_pipeline(c_dtype, sum_class), &sum, sizeof(sum), uint64_t(outputs),
              uint32_t(sum_class == kCustomClass ? t.threads : kTiles[sum_class].threads), &second);
  dev.memory().free(scratch.address);
}

}  // namespace vkml::ops
