#include "vkml/ops/conv.h"

#include <algorithm>
#include <string>
#include <utility>

#include "vkml/core/error.h"
#include "vkml/ops/conv_coopmat.h"
#include "vkml/ops/launch.h"
#include "vkml/ops/matmul.h"
#include "vkml/ops/window.h"
#include "vkml/runtime/memory.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/conv_push.h"

namespace vkml::ops {

namespace {

using Push = conv_detail::Push;

int64_t prod3(const int64_t* v) { return v[0] * v[1] * v[2]; }

constexpr int64_t kGemmMinRows = 8;

// The implicit GEMM's tile side: 64 (256 threads, 4 x 4 outputs each) for convolutions
// with enough such tiles on GPUs, 32 (64 threads) otherwise. 128 (256 threads, 8 x 8
// each) is taken only when TORCH_VKML_GEMM_TILE (ops/matmul.h) forces it, until a GPU
// shows where it is faster; that variable forces the others too.
int32_t conv_tile(const Device& dev, int64_t tiles64) {
  const DeviceInfo& info = dev.info();
  const bool fits = info.max_workgroup_invocations >= 256;
  if (int forced = gemm_tile()) return !fits ? 32 : forced >= 128 ? 128 : forced >= 64 ? 64 : 32;
  return gpu_choices(dev) && fits && tiles64 >= 128 ? 64 : 32;
}

// A pointwise convolution (1 x 1 kernel, stride 1, no padding, one group) is a
// batched GEMM per image, [Co, Ci] x [Ci, positions]: forward and data grad run on
// the GEMM kernel, with its larger tiles, vector loads and matrix units. Its weight
// grad sums over images, which one strided GEMM cannot express; it stays below.
bool pointwise(const ConvShape& s) {
  for (int d = 0; d < 3; ++d)
    if (s.kernel[d] != 1 || s.stride[d] != 1 || s.pad[d] != 0) return false;
  return s.groups == 1;
}

// mode 0: y[n] = w x[n] + bias (per output channel); mode 1: gx[n] = w^T gy[n] + bias.
void pointwise_gemm(Device& dev, DType dtype, int mode, uint64_t src, uint64_t w, uint64_t bias,
                    uint64_t out, const ConvShape& s) {
  const int64_t pos = prod3(s.in);
  const int64_t rows = mode == CONV_FORWARD ? s.co : s.ci, k = mode == CONV_FORWARD ? s.ci : s.co;
  GemmArgs g;
  g.dtype = dtype;
  g.batch = s.n, g.m = rows, g.n = pos, g.k = k;
  g.a = w;  // [Co, Ci], read transposed for the data grad
  g.a_row = mode == CONV_FORWARD ? s.ci : 1, g.a_col = mode == CONV_FORWARD ? 1 : s.ci;
  g.b = src, g.b_batch = k * pos, g.b_row = pos, g.b_col = 1;
  g.c = out, g.c_batch = rows * pos, g.c_row = pos, g.c_col = 1;
  if (bias) {
    g.bias = bias, g.bias_row = 1;
    g.beta = 1.0f;
  }
  gemm(dev, g);
}

void launch(Device& dev, DType dtype, int mode, uint64_t p0, uint64_t p1, uint64_t p2, uint64_t out,
            const ConvShape& s) {
  check_float_dtype(dev, dtype, "conv");
  VKML_CHECK_ARG(s.spatial >= 1 && s.spatial <= 3, "conv: 1 to 3 spatial dims");
  VKML_CHECK_ARG(s.groups >= 1 && s.ci % s.groups == 0 && s.co % s.groups == 0,
                 "conv: channels must divide by groups");
  int64_t x_numel = s.n * s.ci * prod3(s.in), y_numel = s.n * s.co * prod3(s.out);
  int64_t w_numel = s.co * (s.ci / s.groups) * prod3(s.kernel);
  int64_t out_numel = mode == CONV_FORWARD ? y_numel : mode == CONV_DATA_GRAD ? x_numel : w_numel;
  if (out_numel == 0) return;
  if (mode != CONV_WEIGHT_GRAD && pointwise(s) && x_numel > 0 && y_numel > 0) {
    pointwise_gemm(dev, dtype, mode, p0, p1, p2, out, s);
    return;
  }
  check_32bit_indexing(std::max({x_numel, y_numel, w_numel}), 0, "conv");
  Push p{.p0 = p0,
         .p1 = p1,
         .p2 = p2,
         .dst = out,
         .n = uint32_t(s.n),
         .groups = uint32_t(s.groups),
         .ci = uint32_t(s.ci),
         .co = uint32_t(s.co)};
  fill_window(p, s);
  // Mode 0 reads x, w (and bias [Co]) into y; mode 1 gy, w (and bias [Ci]) into
  // gx; mode 2 x, gy into gw.
  const size_t is = itemsize(dtype);
  Access a;
  a.read(span_elems(p0, mode == CONV_DATA_GRAD ? y_numel : x_numel, is));
  a.read(span_elems(p1, mode == CONV_WEIGHT_GRAD ? y_numel : w_numel, is));
  if (p2) a.read(span_elems(p2, mode == CONV_FORWARD ? s.co : s.ci, is));
  a.write(span_elems(out, out_numel, is));
  auto dispatch_tiles = [&](VkPipeline pipeline, uint64_t groups) {
    dispatch_groups(dev, pipeline, &p, sizeof(p), groups, &a);
  };
  int64_t cig = s.ci / s.groups, cog = s.co / s.groups;
  // Keyed by (dtype, shader mode, kernel): the implicit GEMM with 32 (0), 64 (4) or 128
  // (5) tiles, or the direct one by tile (1-3).
  static const PipelineSlots slots({16, CONV_PHASED_DATA_GRAD + 1, 6});
  // Rows of the implicit GEMM per group; with fewer than kGemmMinRows a 32-row tile
  // would be mostly idle, and the direct kernel does better (depthwise, tiny convs).
  int64_t rows = mode == CONV_DATA_GRAD ? cig : cog;
  // Channels per thread of the direct kernel (mode 0: output channels, else input
  // channels) of one group.
  const int64_t per_group = mode == CONV_FORWARD ? cog : cig;
  const int32_t tile = per_group >= 8 ? 8 : per_group >= 4 ? 4 : 1;
  const uint32_t wg = 64;
  // One thread of the direct kernel walks a whole window (a group's channels times the
  // kernel, each step with its tile's inner loop), or in the weight grad its share of
  // every output position. Past half the device's loop iteration limit (lavapipe ends
  // longer loops silently: a conv1d with a 150000-tap kernel, a depthwise weight
  // gradient over 10M positions came out wrong) the implicit GEMM runs it, whose
  // threads walk K in slices.
  const int64_t direct_loop =
      (mode == CONV_WEIGHT_GRAD ? ceil_div(s.n * prod3(s.out), int64_t(wg))
                                : (mode == CONV_FORWARD ? cig : cog) * prod3(s.kernel)) *
      (1 + tile);
  const int64_t limit = dev.info().loop_iteration_limit;
  if (rows >= kGemmMinRows || (limit && direct_loop > limit / 2)) {
    // The data grad of a strided, undilated convolution runs one GEMM per phase
    // (CONV_PHASED_DATA_GRAD): CONV_DATA_GRAD would spend stride^d - 1 of every stride^d products
    // on zeros. The grid holds each phase's tiles for the largest phase's columns.
    bool strided = false, dilated = false;
    int64_t phases = 1, phase_cols = s.n;
    for (int d = 0; d < 3; ++d) {
      strided |= s.stride[d] > 1;
      dilated |= s.dilation[d] > 1;
      phases *= s.stride[d];
      phase_cols *= ceil_div(s.in[d], s.stride[d]);
    }
    const int shader_mode =
        mode == CONV_DATA_GRAD && strided && !dilated ? CONV_PHASED_DATA_GRAD : mode;
    int64_t cols = mode == CONV_FORWARD                   ? s.n * prod3(s.out)
                   : shader_mode == CONV_PHASED_DATA_GRAD ? phase_cols
                   : mode == CONV_DATA_GRAD               ? s.n * prod3(s.in)
                                                          : cig * prod3(s.kernel);
    if (shader_mode != CONV_PHASED_DATA_GRAD) phases = 1;
    const int64_t k = mode == CONV_WEIGHT_GRAD ? s.n * prod3(s.out) : 0;
    // conv_gemm.comp with a 32 (0), 64 (4) or 128 (5) tile; its CONV_SUM pass adds the
    // split-K partials of either kernel.
    auto gemm_pipeline = [&](int32_t bm) {
      const int32_t per_thread = bm == 128 ? 8 : 4;  // outputs along each side
      const int32_t threads = (bm / per_thread) * (bm / per_thread);
      const uint32_t tile_class = bm == 128 ? 5 : bm == 64 ? 4 : 0;
      VkPipeline pipeline =
          slots.get(dev, {uint32_t(dtype), uint32_t(shader_mode), tile_class}, [&] {
            return dev.pipelines().get(shaders::conv_gemm(dtype),
                                       {shader_mode, threads, bm, per_thread, bm == 128 ? 8 : 16});
          });
      return std::pair{pipeline, uint32_t(threads)};
    };
    // fp16 and bf16 on the matrix units where they are in use, else conv_gemm.comp.
    const ConvCoopmatKernel coopmat = conv_coopmat_kernel(dev, dtype, shader_mode, rows, cols);
    VkPipeline pipeline = coopmat.pipeline;
    int64_t bm = coopmat.tile;
    if (!pipeline) {
      // The weight grad's split-K (launch.h) multiplies its few tiles.
      const int64_t tiles64 = phases * s.groups * ceil_div(rows, 64) * ceil_div(cols, 64);
      const int64_t splits64 = mode == CONV_WEIGHT_GRAD ? k_splits(dev, tiles64, k, w_numel) : 1;
      bm = conv_tile(dev, tiles64 * splits64);
      pipeline = gemm_pipeline(int32_t(bm)).first;
    }
    const int64_t tiles = phases * s.groups * ceil_div(rows, bm) * ceil_div(cols, bm);
    const int64_t splits = mode == CONV_WEIGHT_GRAD ? k_splits(dev, tiles, k, w_numel) : 1;
    if (splits == 1) {
      dispatch_tiles(pipeline, uint64_t(tiles));
      return;
    }
    // Partial sums of K slices into scratch, then one pass adding them into gw. The
    // stream orders later work after both, so the scratch is freed at once.
    Allocation scratch = dev.memory().allocate(uint64_t(splits * w_numel) * 4);
    Push partial = p;
    partial.dst = scratch.address;
    partial.splits = uint32_t(splits);
    partial.flags = CONV_PARTIAL;
    Access first;
    first.read(span_elems(p0, x_numel, is));
    first.read(span_elems(p1, y_numel, is));
    first.write(span_elems(scratch.address, splits * w_numel, 4));
    dispatch_groups(dev, pipeline, &partial, sizeof(partial), uint64_t(tiles * splits), &first);
    Push sum = p;
    sum.p0 = scratch.address;
    sum.splits = uint32_t(splits);
    sum.flags = CONV_SUM;
    Access second;
    second.read(span_elems(scratch.address, splits * w_numel, 4));
    second.write(span_elems(out, w_numel, is));
    const auto [sum_pipeline, sum_threads] = gemm_pipeline(coopmat.pipeline ? 32 : int32_t(bm));
    dispatch_1d(dev, sum_pipeline, &sum, sizeof(sum), uint64_t(w_numel), sum_threads, &second);
    dev.memory().free(scratch.address);
    return;
  }
  int64_t tiles = s.groups * ((per_group + tile - 1) / tile);
  const uint32_t tile_class = tile == 8 ? 3 : tile == 4 ? 2 : 1;
  VkPipeline pipeline = slots.get(dev, {uint32_t(dtype), uint32_t(mode), tile_class}, [&] {
    return dev.pipelines().get(shaders::conv(dtype), {mode, int32_t(wg), tile});
  });
  if (mode == CONV_WEIGHT_GRAD) {
    dispatch_tiles(pipeline, uint64_t(s.co * ((per_group + tile - 1) / tile) * prod3(s.kernel)));
  } else {
    int64_t spatial = mode == CONV_FORWARD ? prod3(s.out) : prod3(s.in);
    dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(s.n * tiles * spatial), wg, &a);
  }
}

}  // namespace

void conv_forward(Device& dev, DType dtype, uint64_t x, uint64_t w, uint64_t bias, uint64_t y,
                  const ConvShape& s) {
  launch(dev, dtype, CONV_FORWARD, x, w, bias, y, s);
}

void conv_data_grad(Device& dev, DType dtype, uint64_t gy, uint64_t w, uint64_t bias, uint64_t gx,
                    const ConvShape& s) {
  launch(dev, dtype, CONV_DATA_GRAD, gy, w, bias, gx, s);
}

void conv_weight_grad(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t gw,
                      const ConvShape& s) {
  launch(dev, dtype, CONV_WEIGHT_GRAD, x, gy, 0, gw, s);
}

}  // namespace vkml::ops
