#pragma once
// Fused scaled dot-product attention (shaders/attention_*.comp): forward and backward
// over [B, H, rows, dim] operands, never forming the [L, S] score matrix.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// Which operands are token-major, read and written in place: row r of head h of batch
// b at (b * rows + r) * R + h * dim elements, R = m * H * dim. m = 1 is the layout of a
// model's x.view(B, L, H, E).transpose(1, 2); m = 3 a slice of a packed qkv
// projection. 0: contiguous [B, H, rows, dim]. Gradients are written token-major
// (m = 1) where their input is token-major (dq q's, dk k's, dv v's).
struct AttentionLayout {
  int q = 0, k = 0, v = 0;  // m, 1..255, or 0
  int g = 0;                // the output's grad (backward)
  bool o = false;           // the forward's output (m = 1)
};

// The largest head dim (of q/k and of v) the fused kernels take: a scalar kernel thread
// holds at most 4 vec4s x 8 lanes of gradient columns, and the matrix-unit kernels'
// shared arrays are sized for it.
constexpr int64_t kAttentionMaxHeadDim = 128;

struct AttentionShape {
  int64_t B = 1, H = 1;   // batch and heads: BH = B * H rows of tiles
  int64_t L = 0, S = 0;   // query and key lengths
  int64_t E = 0, Ev = 0;  // head dims of q/k and of v
  AttentionLayout layout;
  // Heads of k and v (0: H). Fewer than H is grouped-query attention: H / Hkv query
  // heads share each k/v head (query head h reads k/v head h / (H / Hkv)).
  int64_t Hkv = 0;
  int64_t kv_heads() const { return Hkv ? Hkv : H; }
};

// An optional additive bias in the storage dtype, read at
// b * strides[0] + h * strides[1] + i * strides[2] + j * strides[3] (zero strides
// broadcast).
struct AttentionBias {
  uint64_t address = 0;
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t span = 0;  // elements from the first to one past the last reachable
};

// Dropout of the probabilities (scaled_dot_product_attention's dropout_p, in [0, 1)):
// each element's keep decision is a function of (seed, offset) and its (query head,
// query, key), so the backward given the forward's seed and offset regenerates the
// forward's mask. p is rounded to a multiple of 2^-23 (and the kept probabilities
// scaled by 1 / (1 - p) of that p), finer than a float's draw against p.
struct AttentionDropout {
  double p = 0.0;
  uint64_t seed = 0, offset = 0;
};

// A benchmark knob, TORCH_VKML_ATTENTION_TILE at start-up: 0 lets each kernel take the
// largest register tiling whose shared arrays fit the device; 1..5 force one of them
// (64 x 32 query rows by keys with 128 threads, 32 x 32, 32 x 16, 16 x 16, 16 x 8 with
// 64) where it fits, for scripts/gpu_gemm_sweep.py.
void set_attention_tiling(int tiling);
int attention_tiling();

// Whether the fused kernels take this shape on this device (head dims, grid and
// shared-memory limits); the caller uses another path otherwise.
bool attention_supported(Device& dev, const AttentionShape& s);

// o [BH, L, Ev] and lse (float32 [BH, L]) from q [BH, L, E], k [BH, S, E], v [BH, S, Ev].
void attention_forward(Device& dev, DType dtype, const AttentionShape& s, uint64_t q, uint64_t k,
                       uint64_t v, const AttentionBias& bias, bool causal, float scale,
                       const AttentionDropout& dropout, uint64_t o, uint64_t lse);

// dq, dk, dv (k's and v's shapes, summed over each k/v head's query heads under GQA) from
// the forward's inputs, lse, the output's grad g and
// delta = rowsum(g * o) (float32 [BH, L]).
void attention_backward(Device& dev, DType dtype, const AttentionShape& s, uint64_t q, uint64_t k,
                        uint64_t v, const AttentionBias& bias, bool causal, float scale,
                        const AttentionDropout& dropout, uint64_t g, uint64_t lse, uint64_t delta,
                        uint64_t dq, uint64_t dk, uint64_t dv);

}  // namespace vkml::ops
