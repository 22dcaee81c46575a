// The push constants of shaders/fake_quantize.comp and fake_quantize_qparams.comp,
// written once for their launcher (vkml/ops/fake_quantize.cpp, C++) and the kernels
// (GLSL), which read the bytes as laid out here. The 64-bit fields come first, so C++
// adds no padding between fields.
#ifndef VKML_FAKE_QUANTIZE_PUSH_H
#define VKML_FAKE_QUANTIZE_PUSH_H

// Threads per workgroup (the kernels' local size).
#define FAKE_QUANTIZE_WG 256

// What fake_quantize_qparams.comp does (push field `mode`).
#define FAKE_QUANTIZE_OBSERVE_AND_CHOOSE 0  // moving-average observer, then scale / zero point
#define FAKE_QUANTIZE_RECIPROCALS 1         // inv_scale = 1 / scale, rounded once

#include "push_block.h"

VKML_CONTRACT_BEGIN(fake_quantize_detail)
// GLSL declares one push block a shader: fake_quantize_qparams.comp defines
// FAKE_QUANTIZE_QPARAMS_KERNEL before including this; C++ sees both.
#if defined(__cplusplus) || !defined(FAKE_QUANTIZE_QPARAMS_KERNEL)
// fake_quantize.comp: dst = (clamp(zp + round(src * inv_scale), qmin, qmax) - zp) * scale
// and mask = whether the rounded value was inside [qmin, qmax], per element of a dense
// tensor (src, dst and mask share strides). With `scale` 0 the qparams are the scalar
// fields; otherwise channel (i / channel_stride) % channels reads scale, inv_scale and
// zero_point (float32, float32, int32). A non-zero `enabled` (int64) at 0 copies src and
// sets the mask.
VKML_PUSH_BEGIN(ApplyPush)
  uint64_t src;
  uint64_t dst;
  uint64_t mask;
  uint64_t scale;
  uint64_t inv_scale;
  uint64_t zero_point;
  uint64_t enabled;
  uint64_t errors;  // device error record: zero points outside [qmin, qmax]
  float scale_value;
  float inv_scale_value;
  int zero_point_value;
  int quant_min;
  int quant_max;
  uint numel;
  uint channels;
  uint channel_stride;
VKML_PUSH_END(ApplyPush, 8 * 8 + 8 * 4)
#endif

#if defined(__cplusplus) || defined(FAKE_QUANTIZE_QPARAMS_KERNEL)
// fake_quantize_qparams.comp, one thread a channel. OBSERVE_AND_CHOOSE: where
// observer_on[0] != 0, running_min/max (float32) move towards x_min/x_max by
// averaging_const (or take them, while still infinite); then where fake_quant_on[0] != 0,
// scale, inv_scale and zero_point are chosen from them as PyTorch's CPU chooses.
// RECIPROCALS: inv_scale = 1 / scale.
VKML_PUSH_BEGIN(QParamsPush)
  uint64_t x_min;
  uint64_t x_max;
  uint64_t running_min;
  uint64_t running_max;
  uint64_t scale;
  uint64_t inv_scale;
  uint64_t zero_point;
  uint64_t observer_on;
  uint64_t fake_quant_on;
  float averaging_const;
  int quant_min;
  int quant_max;
  uint symmetric;
  uint channels;
  uint mode;
VKML_PUSH_END(QParamsPush, 9 * 8 + 6 * 4)
#endif
VKML_CONTRACT_END(fake_quantize_detail)

#endif
