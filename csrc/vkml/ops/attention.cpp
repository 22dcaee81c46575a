#include "vkml/ops/attention.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"

namespace vkml::ops {

namespace {

struct Push {
  uint64_t q, k, v, g, lse, delta, bias, dst, dst2;
  uint32_t bs_b, bs_h, bs_i, bs_j;
  uint32_t H, L, S, E, Ev;
  uint32_t flags;
  float scale;
  uint32_t tm_mult;
};
static_assert(sizeof(Push) <= 128);

// Flags of shaders/attention.comp: which operands are token-major.
constexpr uint32_t kTokenMajorQ = 4, kTokenMajorK = 8, kTokenMajorV = 16, kTokenMajorG = 32,
                   kTokenMajorDst = 64, kTokenMajorDst2 = 128;

constexpr int64_t kMaxHeadDim = 128;  // the shader's 16 accumulators x 8 lanes
constexpr uint32_t kLanes = 8;

struct Tiling {
  uint32_t rows = 0;  // BR; 0: no tiling fits the device
  uint32_t ep = 0;    // head dims rounded up to a multiple of 8
};

// The largest tile (rows of queries and of keys) whose six shared arrays fit the
// device: four [BR, EP + 1] operand tiles, two [BR, BR] score tiles, three row vectors.
Tiling tiling(Device& dev, const AttentionShape& s) {
  int64_t e = std::max(s.E, s.Ev);
  if (e <= 0 || e > kMaxHeadDim) return {};
  uint32_t ep = uint32_t((e + kLanes - 1) / kLanes * kLanes);
  for (uint32_t br : {32u, 16u, 8u}) {
    uint64_t bytes = 4ull * (4ull * br * (ep + 1) + 2ull * br * br + 3ull * br);
    if (bytes <= dev.info().max_shared_memory &&
        br * kLanes <= dev.info().max_workgroup_invocations)
      return {br, ep};
  }
  return {};
}

int64_t tiles(int64_t n, uint32_t br) { return (n + br - 1) / br; }

Push make_push(const AttentionShape& s, const AttentionBias& bias, bool causal, float scale) {
  Push p{};
  p.bias = bias.address;
  p.bs_b = uint32_t(bias.strides[0]);
  p.bs_h = uint32_t(bias.strides[1]);
  p.bs_i = uint32_t(bias.strides[2]);
  p.bs_j = uint32_t(bias.strides[3]);
  p.H = uint32_t(s.H);
  p.L = uint32_t(s.L);
  p.S = uint32_t(s.S);
  p.E = uint32_t(s.E);
  p.Ev = uint32_t(s.Ev);
  const AttentionLayout& l = s.layout;
  p.flags = (causal ? 1u : 0u) | (bias.address != 0 ? 2u : 0u) | (l.q ? kTokenMajorQ : 0u) |
            (l.k ? kTokenMajorK : 0u) | (l.v ? kTokenMajorV : 0u) | (l.g ? kTokenMajorG : 0u);
  p.tm_mult = uint32_t(l.q) | uint32_t(l.k) << 8 | uint32_t(l.v) << 16 | uint32_t(l.g) << 24;
  p.scale = scale;
  return p;
}

void run(Device& dev, DType dtype, int mode, const AttentionShape& s, const Push& p,
         int64_t row_tiles, const Access& access) {
  Tiling t = tiling(dev, s);
  // Keyed by (dtype, mode, head-dim class); the row tile follows from those on a device.
  static const PipelineSlots slots({16, 3, kMaxHeadDim / kLanes + 1});
  VkPipeline pipeline = slots.get(dev, {uint32_t(dtype), uint32_t(mode), t.ep / kLanes}, [&] {
    return dev.pipelines().get(
        std::string("attention_") + float_variant(dev, dtype, "scaled_dot_product_attention"),
        {mode, int32_t(t.rows), int32_t(t.ep), int32_t(t.rows * kLanes)});
  });
  dev.stream().dispatch(pipeline, &p, sizeof(p), uint32_t(row_tiles), uint32_t(s.B * s.H), 1,
                        &access);
}

// Rows of a token-major operand are m times further apart than its own width.
int64_t spread(int m) { return m > 0 ? m : 1; }

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

bool attention_supported(Device& dev, const AttentionShape& s) {
  if (s.B < 1 || s.H < 1 || s.L < 1 || s.S < 1 || s.E < 1 || s.Ev < 1) return false;
  Tiling t = tiling(dev, s);
  if (t.rows == 0) return false;
  uint64_t max_y = std::min<uint64_t>(dev.info().max_workgroup_count[1], 65535);
  uint64_t max_x = std::min<uint64_t>(dev.info().max_workgroup_count[0], 65535);
  int64_t rows = std::max(s.L, s.S);
  int64_t elems = s.B * s.H * rows * std::max(s.E, s.Ev);
  return uint64_t(s.B * s.H) <= max_y && uint64_t(tiles(rows, t.rows)) <= max_x &&
         elems < (int64_t(1) << 31);
}

void attention_forward(Device& dev, DType dtype, const AttentionShape& s, uint64_t q, uint64_t k,
                       uint64_t v, const AttentionBias& bias, bool causal, float scale, uint64_t o,
                       uint64_t lse) {
  check(dev, s, bias);
  size_t is = itemsize(dtype);
  int64_t bh = s.B * s.H;
  Push p = make_push(s, bias, causal, scale);
  p.q = q;
  p.k = k;
  p.v = v;
  p.dst = o;
  if (s.layout.o) p.flags |= kTokenMajorDst;
  p.lse = lse;
  Access a;
  const AttentionLayout& l = s.layout;
  a.read(span_elems(q, bh * s.L * s.E * spread(l.q), is));
  a.read(span_elems(k, bh * s.S * s.E * spread(l.k), is));
  a.read(span_elems(v, bh * s.S * s.Ev * spread(l.v), is));
  if (bias.address != 0) a.read(span_elems(bias.address, bias.span, is));
  a.write(span_elems(o, bh * s.L * s.Ev, is));
  a.write(span_elems(lse, bh * s.L, 4));
  run(dev, dtype, 0, s, p, tiles(s.L, tiling(dev, s).rows), a);
}

void attention_backward(Device& dev, DType dtype, const AttentionShape& s, uint64_t q, uint64_t k,
                        uint64_t v, const AttentionBias& bias, bool causal, float scale, uint64_t g,
                        uint64_t lse, uint64_t delta, uint64_t dq, uint64_t dk, uint64_t dv) {
  check(dev, s, bias);
  size_t is = itemsize(dtype);
  int64_t bh = s.B * s.H;
  uint32_t br = tiling(dev, s).rows;
  Push p = make_push(s, bias, causal, scale);
  p.q = q;
  p.k = k;
  p.v = v;
  p.g = g;
  p.lse = lse;
  p.delta = delta;
  Access in;
  const AttentionLayout& l = s.layout;
  in.read(span_elems(q, bh * s.L * s.E * spread(l.q), is));
  in.read(span_elems(k, bh * s.S * s.E * spread(l.k), is));
  in.read(span_elems(v, bh * s.S * s.Ev * spread(l.v), is));
  in.read(span_elems(g, bh * s.L * s.Ev * spread(l.g), is));
  in.read(span_elems(lse, bh * s.L, 4));
  in.read(span_elems(delta, bh * s.L, 4));
  if (bias.address != 0) in.read(span_elems(bias.address, bias.span, is));

  Access kv = in;
  kv.write(span_elems(dk, bh * s.S * s.E, is));
  kv.write(span_elems(dv, bh * s.S * s.Ev, is));
  p.dst = dk;
  p.dst2 = dv;
  const uint32_t base_flags = p.flags;
  p.flags = base_flags | (s.layout.k ? kTokenMajorDst : 0u) | (s.layout.v ? kTokenMajorDst2 : 0u);
  run(dev, dtype, 1, s, p, tiles(s.S, br), kv);

  Access qa = in;
  qa.write(span_elems(dq, bh * s.L * s.E, is));
  p.dst = dq;
  p.dst2 = 0;
  p.flags = base_flags | (s.layout.q ? kTokenMajorDst : 0u);
  run(dev, dtype, 2, s, p, tiles(s.L, br), qa);
}

}  // namespace vkml::ops
