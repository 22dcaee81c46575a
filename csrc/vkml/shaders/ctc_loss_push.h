// The push constants, modes and flags of shaders/ctc_loss.comp, written once for its
// launcher (vkml/ops/ctc_loss.cpp, C++) and the kernel (GLSL): the kernel reads the
// bytes as laid out here, so a field moved on one side only would shift the rest.
// The 64-bit fields come first, so C++'s natural alignment adds no padding that
// GLSL's scalar layout would not have.
#ifndef VKML_CTC_LOSS_PUSH_H
#define VKML_CTC_LOSS_PUSH_H

// Specialization constant 0.
#define CTC_FORWARD 0
#define CTC_BACKWARD 1

// flags
#define CTC_ZERO_INFINITY 1u

#include "push_block.h"

VKML_CONTRACT_BEGIN(ctc_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t log_probs;  // [T, N, C] with the strides below
  uint64_t targets;    // int64, contiguous; sample n's labels start at its target offset
  uint64_t lengths;    // int64 [N, 3]: input length, target length, target offset
  uint64_t log_alpha;  // [N, T, L]: written by forward, read by backward
  uint64_t nll;        // [N]: written by forward, read by backward
  uint64_t grad_out;   // backward: [N] with stride grad_out_stride
  uint64_t grad;       // backward: contiguous [T, N, C]
  uint64_t beta;       // backward scratch: [N, 3, L] reals (two beta rows, alpha + beta)
  uint64_t groups;     // backward scratch: int32 [N, C] first target index of each label,
                       // then int32 [N, (L - 1) / 2] the next index with the same label
  uint t_len, n, c;
  uint l;  // 2 * max target length + 1: the extended-label positions log_alpha holds
  uint lp_stride_t, lp_stride_n, lp_stride_c;
  uint grad_out_stride;
  uint blank;
  uint flags;
VKML_PUSH_END(Push, 9 * 8 + 10 * 4)
VKML_CONTRACT_END(ctc_detail)

#endif
