// The push constants and flags of shaders/attention_forward.comp and
// attention_backward.comp (through attention_common.glsl), written once for their
// launcher (vkml/ops/attention.cpp, C++) and the kernels (GLSL), which read the bytes as
// laid out here. The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_ATTENTION_PUSH_H
#define VKML_ATTENTION_PUSH_H

// flags
#define ATTENTION_CAUSAL 1u  // key j > query i masked
#define ATTENTION_BIAS 2u
// Token-major operands.
#define ATTENTION_TM_Q 4u
#define ATTENTION_TM_K 8u
#define ATTENTION_TM_V 16u
#define ATTENTION_TM_G 32u
#define ATTENTION_TM_DST 64u
#define ATTENTION_TM_DST2 128u
// The results at dst and dst2 have k's and v's heads (the key/value grads under GQA).
#define ATTENTION_DST_KV 256u
// flags >> ATTENTION_DROPOUT_SHIFT: dropout of the probabilities with p = that / 2^23
// (0: none), keyed by drop_key (attention_common.glsl's dropout_keep).
#define ATTENTION_DROPOUT_SHIFT 9u
#define ATTENTION_DROPOUT_ONE 8388608u  // 2^23: p = 1

// Modes (specialization constant 0 of attention_backward.comp). The launcher keys its
// pipelines by mode too, ATTENTION_FORWARD standing for attention_forward.comp (no modes),
// and sizes its slots by the last, ATTENTION_QUERY_GRAD.
#define ATTENTION_FORWARD 0u
#define ATTENTION_KEY_VALUE_GRADS 1u  // a workgroup owns keys: dk, dv
#define ATTENTION_QUERY_GRAD 2u       // a workgroup owns queries: dq

#include "push_block.h"

VKML_CONTRACT_BEGIN(attention_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t q, k, v;
  uint64_t g;                   // backward: grad of the output
  uint64_t lse;                 // forward: written; backward: read
  uint64_t delta;               // backward
  uint64_t bias;                // 0: none
  uint64_t dst;                 // forward: o; key/value grads: dk; query grad: dq
  uint64_t dst2;                // key/value grads: dv
  uint bs_b, bs_h, bs_i, bs_j;  // bias element strides
  // H | Hkv << 16: heads of q, and of k and v, dividing H: H / Hkv query heads share
  // each k/v head (GQA). Both below 2^16, as grids of B * H workgroups rows need.
  uint heads;
  uint L, S, E, Ev;
  uint flags;  // the flags above, and the dropout threshold from ATTENTION_DROPOUT_SHIFT
  float scale;
  uint tm_mult;                 // row-stride multiples of token-major q, k, v, dO: a byte each
  uint drop_key_lo, drop_key_hi;  // the dropout mask's Philox key
VKML_PUSH_END(Push, 9 * 8 + 14 * 4)
VKML_CONTRACT_END(attention_detail)

#endif
