// Shared by the attention kernels (attention_forward.comp, attention_backward.comp):
// the push constants (attention_push.h) and the operand addressing.
//
// Operands are in the storage dtype, each either contiguous [B, H, rows, dim] or
// token-major (a flag bit each): row r of head h at (b * rows + r) * R + h * dim with
// R = m * H * dim, m a byte of tm_mult (q, k, v, dO; 1 for outputs). That is what a
// model's x.view(B, L, H, E).transpose(1, 2) gives (m = 1), or a slice of a packed
// qkv projection (m = 3), read in place. lse and delta are float32 [BH, L]. The
// optional additive bias is read through (b, h, i, j) element strides, so a broadcast
// mask is never expanded.

#include "attention_push.h"
#include "philox.glsl"

#define NEG_INF uintBitsToFloat(0xff800000u)
#define HEADS (pc.heads & 0xffffu)  // of q
#define KV_HEADS (pc.heads >> 16)   // of k and v

// Element offset of row `row` (of `rows`) of head bh in an operand `n` wide; bh counts
// the operand's own heads (k's and v's Hkv for them and their grads, else H).
uint row_offset(uint tm_flag, uint bh, uint row, uint rows, uint n) {
  if ((pc.flags & tm_flag) == 0u) return (bh * rows + row) * n;
  bool kv = tm_flag == ATTENTION_TM_K || tm_flag == ATTENTION_TM_V ||
            (tm_flag >= ATTENTION_TM_DST && (pc.flags & ATTENTION_DST_KV) != 0u);
  uint heads = kv ? KV_HEADS : HEADS;
  uint b = bh / heads, h = bh % heads;
  uint shift = tm_flag == ATTENTION_TM_Q ? 0u
             : tm_flag == ATTENTION_TM_K ? 8u
             : tm_flag == ATTENTION_TM_V ? 16u
             : tm_flag == ATTENTION_TM_G ? 24u
                                         : 32u;
  uint m = shift < 32u ? max((pc.tm_mult >> shift) & 255u, 1u) : 1u;
  return ((b * rows + row) * m * heads + h) * n;
}

// The (batch, k/v head) of query head bh: H / Hkv query heads share one (GQA).
uint kv_head(uint bh) { return bh / HEADS * KV_HEADS + bh % HEADS / (HEADS / KV_HEADS); }
// Query head t of the group that shares k/v head bkv.
uint query_head(uint bkv, uint t) {
  return bkv / KV_HEADS * HEADS + bkv % KV_HEADS * (HEADS / KV_HEADS) + t;
}

// The additive bias of query i, key j in head bh.
float bias_at(uint bh, uint i, uint j) {
  uint b = bh / HEADS, h = bh % HEADS;
  return LD(pc.bias, b * pc.bs_b + h * pc.bs_h + i * pc.bs_i + j * pc.bs_j);
}

// Dropout of the probabilities, as scaled_dot_product_attention's dropout_p: P's
// element (i, j) of query head bh is kept with probability 1 - p, and what is kept is
// scaled by 1 / (1 - p) (dropout_scale, applied by the kernels where it costs least).
// Each element's draw is Philox4x32-7 of counter (j, i, bh, 0) under the call's key,
// so the backward regenerates the forward's mask from the same key, whatever the
// kernel or tiling; seven rounds pass BigCrush (Salmon et al., SC'11).
bool dropping() { return (pc.flags >> ATTENTION_DROPOUT_SHIFT) != 0u; }
bool dropout_keep(uint bh, uint i, uint j) {
  uint r = philox4x32(uvec4(j, i, bh, 0u), uvec2(pc.drop_key_lo, pc.drop_key_hi), 7).x;
  return (r >> 9) >= (pc.flags >> ATTENTION_DROPOUT_SHIFT);
}
// 1 / (1 - p), p a multiple of 2^-23 (exact in fp32); 1 without dropout.
float dropout_scale() {
  return 1.0 / (1.0 - float(pc.flags >> ATTENTION_DROPOUT_SHIFT) * (1.0 / 8388608.0));
}
// The factor P's element is multiplied by in the products: 0 or dropout_scale().
float dropout_factor(uint bh, uint i, uint j) {
  if (!dropping()) return 1.0;
  return dropout_keep(bh, i, j) ? dropout_scale() : 0.0;
}

// Rows [row0, row0 + NR) of head bh's [rows, n] operand into the vec4 tile TILE, PITCH
// vec4s a row, zeros past its end; the kernel defines E4 (vec4s of head dims) and WG.
// A macro: GLSL passes arrays by value, shared ones too.
#define LOAD_TILE(TILE, PITCH, NR, BASE, TM_FLAG, BH, ROW0, ROWS, N)                 \
  for (uint idx = gl_LocalInvocationID.x; idx < (NR) * E4; idx += WG) {              \
    uint r_ = idx / E4, c_ = idx % E4 * 4u;                                          \
    vec4 x_ = vec4(0.0);                                                             \
    if ((ROW0) + r_ < (ROWS)) {                                                      \
      uint o_ = row_offset(TM_FLAG, BH, (ROW0) + r_, ROWS, N);                       \
      [[unroll]] for (uint w_ = 0u; w_ < 4u; ++w_)                                   \
        if (c_ + w_ < (N)) x_[w_] = LD(BASE, o_ + c_ + w_);                          \
    }                                                                                \
    TILE[r_ * (PITCH) + idx % E4] = x_;                                              \
  }
