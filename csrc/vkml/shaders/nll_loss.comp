#version 450
// Negative log-likelihood loss over [n, c] log-probabilities with int64 targets.
//
// Specialization constant 0 = mode: 0 forward (one workgroup loops over the
// samples, writes per-sample losses for reduction none, and reduces the loss
// and the total weight), 1 backward (one thread per element of grad_input).
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "device_error.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 256;

// LDV: a loaded element as float; ST: a float as the stored element.
#if defined(ST_F16)
#define BUF BufF16
#define ST(x) float16_t(x)
#define LDV(x) float(x)
#elif defined(ST_BF16)
#define BUF BufU16
#define ST(x) uint16_t(f32_to_bf16(x))
#define LDV(x) bf16_to_f32(uint(x))
#else
#define BUF BufF32
#define ST(x) (x)
#define LDV(x) float(x)
#endif

#define NAN_F uintBitsToFloat(0x7fc00000u)

#include "nll_loss_push.h"

float weight_of(int64_t t) {
  return (pc.flags & NLL_LOSS_WEIGHT) != 0u ? LDV(BUF(pc.weight).v[uint(t)]) : 1.0;
}

shared float s_loss[WG];
shared float s_w[WG];
shared uint s_bad[WG];

void main() {
  if (MODE == NLL_LOSS_FORWARD) {
    uint tid = gl_LocalInvocationID.x;
    float loss = 0.0, tw = 0.0;
    uint bad = 0u;
    for (uint i = tid; i < pc.n; i += WG) {
      int64_t t = BufI64(pc.target).v[i];
      float li = 0.0;
      if (t != pc.ignore_index) {
        if (t < 0 || t >= int64_t(pc.c)) {
          bad = 1u;
          li = NAN_F;
          report_device_error(pc.errors, DEVICE_ERROR_TARGET, t, int64_t(pc.c), 0u);
        } else {
          float w = weight_of(t);
          li = -w * LDV(BUF(pc.scores).v[i * pc.c + uint(t)]);
          loss += li;
          tw += w;
        }
      }
      if (pc.reduction == LOSS_REDUCTION_NONE) BUF(pc.loss_out).v[i] = ST(li);
    }
    s_loss[tid] = loss;
    s_w[tid] = tw;
    s_bad[tid] = bad;
    barrier();
    for (uint step = WG / 2; step > 0; step >>= 1) {
      if (tid < step) {
        s_loss[tid] += s_loss[tid + step];
        s_w[tid] += s_w[tid + step];
        s_bad[tid] |= s_bad[tid + step];
      }
      barrier();
    }
    if (tid == 0) {
      tw = s_w[0];
      BUF(pc.total_weight).v[0] = ST(tw);
      if (pc.reduction != LOSS_REDUCTION_NONE) {
        float v = s_loss[0];
        if (pc.reduction == LOSS_REDUCTION_MEAN) v /= tw;
        if (s_bad[0] != 0u) v = NAN_F;
        BUF(pc.loss_out).v[0] = ST(v);
      }
    }
  } else {  // NLL_LOSS_BACKWARD
    uint e = linear_id();
    if (e >= pc.n * pc.c) return;
    uint i = e / pc.c, j = e - i * pc.c;
    int64_t t = BufI64(pc.target).v[i];
    float v = 0.0;
    if (t == int64_t(j) && t != pc.ignore_index) {
      float g = LDV(BUF(pc.grad_output).v[pc.reduction == LOSS_REDUCTION_NONE ? i : 0u]);
      if (pc.reduction == LOSS_REDUCTION_MEAN) g /= LDV(BUF(pc.total_weight).v[0]);
      v = -weight_of(t) * g;
    }
    BUF(pc.grad_input).v[e] = ST(v);
  }
}
