#include "vkml/ops/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/attention_coopmat.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/attention_push.h"

namespace vkml::ops {

namespace {

using Push = attention_detail::Push;

constexpr uint32_t kLanes = 8;  // NTX of the kernels' thread grids

// A register-blocked tile of the kernels (attention_forward.comp,
// attention_backward.comp): an NTY x 8 thread grid, each thread holding TM rows by TN
// columns of scores; rows() owned rows against cols() streamed ones at a time.
struct Tiling {
  uint32_t tm = 0, tn = 0, threads = 0;  // threads = 0: none fits the device
  uint32_t ep = 0;                       // head dims rounded up to a multiple of 32
  uint32_t index = 0;                    // in kTilings
  uint64_t rows() const { return threads / kLanes * tm; }
  uint64_t cols() const { return kLanes * tn; }
};
constexpr Tiling kTilings[] = {{4, 4, 128}, {4, 4, 64}, {4, 2, 64}, {2, 2, 64}, {2, 1, 64}};
constexpr int kTilingCount = int(std::size(kTilings));
// Orders in which choose() tries them (indices into kTilings).
constexpr int kLargestFirst[] = {0, 1, 2, 3, 4}, kSmallestFirst[] = {4, 3, 2, 1, 0};

int tiling_from_env() {
  const char* v = std::getenv("TORCH_VKML_ATTENTION_TILE");
  int i = v ? std::atoi(v) : 0;
  return i >= 0 && i <= kTilingCount ? i : 0;
}
std::atomic<int>& forced_tiling() {
  static std::atomic<int> forced{tiling_from_env()};
  return forced;
}

// The first candidate in `order` (indices into kTilings) whose shared arrays (`floats`
// of a tiling) fit the device, or the forced one (set_attention_tiling) where it fits.
template <typename Floats>
Tiling choose(Device& dev, const AttentionShape& s, const int (&order)[kTilingCount],
              Floats floats) {
  int64_t e = std::max(s.E, s.Ev);
  if (e <= 0 || e > kAttentionMaxHeadDim) return {};
  auto fitted = [&](int i) {
    Tiling t = kTilings[i];
    t.ep = uint32_t((e + 31) / 32 * 32);
    t.index = uint32_t(i);
    bool fits = 4 * floats(t) <= dev.info().max_shared_memory &&
                t.threads <= dev.info().max_workgroup_invocations;
    return fits ? t : Tiling{};
  };
  if (int forced = forced_tiling().load()) {
    Tiling t = fitted(forced - 1);
    if (t.threads) return t;
  }
  for (int i : order) {
    Tiling t = fitted(i);
    if (t.threads) return t;
  }
  return {};
}

// Forward: q [rows, EP + 4], k [cols, EP + 4], v [cols, EP], the probabilities
// [rows, cols + 4] and a [rows, 8] exchange of row maxima.
Tiling forward_tiling(Device& dev, const AttentionShape& s) {
  return choose(dev, s, kLargestFirst, [](const Tiling& t) {
    return (t.rows() + t.cols()) * (t.ep + 4) + t.cols() * t.ep + t.rows() * (t.cols() + 4) +
           t.rows() * kLanes;
  });
}

// Backward (both modes): two owned and two streamed [n, EP + 4] operands and two
// [rows, cols + 4] probability tiles. On GPUs the smallest tiling first: the large
// ones' shared arrays (44 KB for 4 x 4 x 64) leave an SM a few 64-thread workgroups,
// and on the H200 (causal fp32, 8 x 12 x 2048 x 64) forward + backward ran at 5.7
// TFLOP/s with 2 x 1 x 64 against 3.7 with 4 x 4 x 64. CPU devices keep the largest.
Tiling backward_tiling(Device& dev, const AttentionShape& s) {
  return choose(dev, s, gpu_choices(dev) ? kSmallestFirst : kLargestFirst, [](const Tiling& t) {
    return 2 * (t.rows() + t.cols()) * (t.ep + 4) + 2 * t.rows() * (t.cols() + 4);
  });
}

// The kernel's pipeline for this dtype and tiling: slots keyed by (dtype, mode, head-dim
// class, tiling). ATTENTION_FORWARD is the forward.
VkPipeline pipeline(Device& dev, DType dtype, uint32_t mode, const Tiling& t) {
  static const PipelineSlots slots(
      {16, ATTENTION_QUERY_GRAD + 1, kAttentionMaxHeadDim / 32 + 1, uint32_t(kTilingCount)});
  return slots.get(dev, {uint32_t(dtype), mode, t.ep / 32, t.index}, [&] {
    check_float_dtype(dev, dtype, "scaled_dot_product_attention");
    if (mode == ATTENTION_FORWARD) {
      return dev.pipelines().get(shaders::attention_forward(dtype),
                                 {int32_t(t.tm), int32_t(t.tn), int32_t(t.ep), int32_t(t.threads)});
    }
    return dev.pipelines().get(
        shaders::attention_backward(dtype),
        {int32_t(mode), int32_t(t.tm), int32_t(t.tn), int32_t(t.ep), int32_t(t.threads)});
  });
}

int64_t tiles(int64_t n, uint64_t rows) { return (n + int64_t(rows) - 1) / int64_t(rows); }

uint64_t mix64(uint64_t x) {  // SplitMix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The dropout threshold (p in units of 2^-23; 0: none) and the mask's Philox key, one
// per (seed, offset): a call's mask is its own stream, as random.cpp's calls are.
void set_dropout(Push& p, const AttentionDropout& d) {
  VKML_CHECK_ARG(d.p >= 0.0 && d.p < 1.0,
                 "scaled_dot_product_attention: the fused kernels take dropout_p in [0, 1)");
  if (d.p == 0.0) return;
  const double t = std::nearbyint(d.p * double(ATTENTION_DROPOUT_ONE));
  const uint32_t threshold = uint32_t(std::clamp(t, 1.0, double(ATTENTION_DROPOUT_ONE - 1)));
  p.flags |= threshold << ATTENTION_DROPOUT_SHIFT;
  const uint64_t key = mix64(d.seed ^ mix64(d.offset));
  p.drop_key_lo = uint32_t(key);
  p.drop_key_hi = uint32_t(key >> 32);
}

// The push constants every attention kernel shares: q, k, v, the bias and the shape.
Push make_push(const AttentionShape& s, const AttentionBias& bias, bool causal, float scale,
               uint64_t q, uint64_t k, uint64_t v) {
  Push p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.bias = bias.address;
  p.bs_b = uint32_t(bias.strides[0]);
  p.bs_h = uint32_t(bias.strides[1]);
  p.bs_i = uint32_t(bias.strides[2]);
  p.bs_j = uint32_t(bias.strides[3]);
  // attention_supported keeps B * H within a grid's 65535 rows, so both fit 16 bits.
  p.heads = uint32_t(s.H) | uint32_t(s.kv_heads()) << 16;
  p.L = uint32_t(s.L);
  p.S = uint32_t(s.S);
  p.E = uint32_t(s.E);
  p.Ev = uint32_t(s.Ev);
  const AttentionLayout& l = s.layout;
  p.flags = (causal ? ATTENTION_CAUSAL : 0u) | (bias.address != 0 ? ATTENTION_BIAS : 0u) |
            (l.q ? ATTENTION_TM_Q : 0u) | (l.k ? ATTENTION_TM_K : 0u) |
            (l.v ? ATTENTION_TM_V : 0u) | (l.g ? ATTENTION_TM_G : 0u);
  p.tm_mult = uint32_t(l.q) | uint32_t(l.k) << 8 | uint32_t(l.v) << 16 | uint32_t(l.g) << 24;
  p.scale = scale;
  return p;
}

// One kernel of `mode` over its owned rows (queries, or keys for the key/value grads):
// the matrix-unit kernel where it runs, else the scalar one's tiling.
void run(Device& dev, DType dtype, uint32_t mode, const AttentionShape& s, const Push& p,
         const Access& access) {
  AttentionCoopmatKernel k = attention_coopmat_kernel(dev, dtype, mode, s);
  uint64_t rows = k.rows;
  if (!k.pipeline) {
    Tiling t = mode == ATTENTION_FORWARD ? forward_tiling(dev, s) : backward_tiling(dev, s);
    k.pipeline = pipeline(dev, dtype, mode, t);
    rows = t.rows();
  }
  // The key/value grads' workgroups own k/v heads, the others query heads.
  const bool kv = mode == ATTENTION_KEY_VALUE_GRADS;
  dev.stream().dispatch(k.pipeline, &p, sizeof(p), uint32_t(tiles(kv ? s.S : s.L, rows)),
                        uint32_t(s.B * (kv ? s.kv_heads() : s.H)), 1, &access);
}

// Rows of a token-major operand are m times further apart than its own width.
int64_t spread(int m) { return m > 0 ? m : 1; }

// What every attention kernel reads: q, k and v (in their layouts) and the bias.
Access read_inputs(const AttentionShape& s, const AttentionBias& bias, size_t is, uint64_t q,
                   uint64_t k, uint64_t v) {
  const int64_t bh = s.B * s.H, bkv = s.B * s.kv_heads();
  const AttentionLayout& l = s.layout;
  Access a;
  a.read(span_elems(q, bh * s.L * s.E * spread(l.q), is));
  a.read(span_elems(k, bkv * s.S * s.E * spread(l.k), is));
  a.read(span_elems(v, bkv * s.S * s.Ev * spread(l.v), is));
  if (bias.address != 0) a.read(span_elems(bias.address, bias.span, is));
  return a;
}

void check(Device& dev, const AttentionShape& s, const AttentionBias& bias) {
  VKML_CHECK_ARG(attention_supported(dev, s),
                 "scaled_dot_product_attention: the fused kernel does not take this shape");
  const AttentionLayout& l = s.layout;
  for (int m : {l.q, l.k, l.v, l.g})
    VKML_CHECK_ARG(m >= 0 && m <= 255, "scaled_dot_product_attention: bad operand layout");
  int64_t most = std::max({spread(l.q), spread(l.k), spread(l.v), spread(l.g)});
  check_32bit_indexing(s.B * s.H * std::max(s.L, s.S) * std::max(s.E, s.Ev) * most, 0,
                       "scaled_dot_product_attention");
  for (int64_t stride : bias.strides) {
    VKML_CHECK_ARG(stride >= 0 && stride < (int64_t(1) << 31),
                   "scaled_dot_product_attention: bias strides must be non-negative 32-bit");
  }
  check_32bit_indexing(bias.span, bias.span, "scaled_dot_product_attention");
}

}  // namespace

void set_attention_tiling(int tiling) {
  VKML_CHECK_ARG(tiling >= 0 && tiling <= kTilingCount,
                 "attention tiling: 0 (automatic) or 1.." + std::to_string(kTilingCount));
  forced_tiling().store(tiling);
}
int attention_tiling() { return forced_tiling().load(); }

bool attention_supported(Device& dev, const AttentionShape& s) {
  if (s.B < 1 || s.H < 1 || s.L < 1 || s.S < 1 || s.E < 1 || s.Ev < 1) return false;
  if (s.kv_heads() < 1 || s.H % s.kv_heads() != 0) return false;
  Tiling f = forward_tiling(dev, s), b = backward_tiling(dev, s);
  if (f.threads == 0 || b.threads == 0) return false;
  uint64_t max_y = std::min<uint64_t>(dev.info().max_workgroup_count[1], 65535);
  uint64_t max_x = std::min<uint64_t>(dev.info().max_workgroup_count[0], 65535);
  int64_t rows = std::max(s.L, s.S);
  int64_t elems = s.B * s.H * rows * std::max(s.E, s.Ev);
  return uint64_t(s.B * s.H) <= max_y &&
         uint64_t(tiles(rows, std::min(f.rows(), b.rows()))) <= max_x && elems < (int64_t(1) << 31);
}

void attention_forward(Device& dev, DType dtype, const AttentionShape& s, uint64_t q, uint64_t k,
                       uint64_t v, const AttentionBias& bias, bool causal, float scale,
                       const AttentionDropout& dropout, uint64_t o, uint64_t lse) {
  check(dev, s, bias);
  size_t is = itemsize(dtype);
  int64_t bh = s.B * s.H;
  Push p = make_push(s, bias, causal, scale, q, k, v);
  set_dropout(p, dropout);
  p.dst = o;
  if (s.layout.o) p.flags |= ATTENTION_TM_DST;
  p.lse = lse;
  Access a = read_inputs(s, bias, is, q, k, v);
  a.write(span_elems(o, bh * s.L * s.Ev, is));
  a.write(span_elems(lse, bh * s.L, 4));
  run(dev, dtype, ATTENTION_FORWARD, s, p, a);
}

void attention_backward(Device& dev, DType dtype, const AttentionShape& s, uint64_t q, uint64_t k,
                        uint64_t v, const AttentionBias& bias, bool causal, float scale,
                        const AttentionDropout& dropout, uint64_t g, uint64_t lse, uint64_t delta,
                        uint64_t dq, uint64_t dk, uint64_t dv) {
  check(dev, s, bias);
  size_t is = itemsize(dtype);
  int64_t bh = s.B * s.H;
  Push p = make_push(s, bias, causal, scale, q, k, v);
  set_dropout(p, dropout);
  p.g = g;
  p.lse = lse;
  p.delta = delta;
  Access in = read_inputs(s, bias, is, q, k, v);
  in.read(span_elems(g, bh * s.L * s.Ev * spread(s.layout.g), is));
  in.read(span_elems(lse, bh * s.L, 4));
  in.read(span_elems(delta, bh * s.L, 4));

  Access kv = in;
  const int64_t bkv = s.B * s.kv_heads();
  kv.write(span_elems(dk, bkv * s.S * s.E, is));
  kv.write(span_elems(dv, bkv * s.S * s.Ev, is));
  p.dst = dk;
  p.dst2 = dv;
  const uint32_t base_flags = p.flags;
  p.flags = base_flags | ATTENTION_DST_KV | (s.layout.k ? ATTENTION_TM_DST : 0u) |
            (s.layout.v ? ATTENTION_TM_DST2 : 0u);
  run(dev, dtype, ATTENTION_KEY_VALUE_GRADS, s, p, kv);

  Access qa = in;
  qa.write(span_elems(dq, bh * s.L * s.E, is));
  p.dst = dq;
  p.dst2 = 0;
  p.flags = base_flags | (s.layout.q ? ATTENTION_TM_DST : 0u);
  run(dev, dtype, ATTENTION_QUERY_GRAD, s, p, qa);
}

}  // namespace vkml::ops
