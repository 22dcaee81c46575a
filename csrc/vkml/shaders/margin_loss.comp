#version 450
// Multi-class and multi-label margin losses over contiguous float32 [n, c] scores,
// one thread per sample (a row's terms depend on its target score, and c is the
// number of classes: small). Per-sample losses are written; the adapter reduces.
//
// Specialization constant 0 = mode: 0 multi_margin forward, 1 multi_margin
// backward, 2 multilabel forward (also writes is_target), 3 multilabel backward.
// Backward reads a per-sample gradient factor (grad_output, divided by n for
// the mean) and writes the whole grad_input row.
#include "common.glsl"

layout(constant_id = 0) const int MODE = 0;

#include "margin_loss_push.h"

const uint WG = MARGIN_LOSS_WG;
layout(local_size_x = WG) in;

float xs(uint i) { return BufF32(pc.x).v[i]; }

void main() {
  uint i = linear_id();
  if (i >= pc.n) return;
  uint row = i * pc.c;
  float inv_c = 1.0 / float(pc.c);
  if (MODE == MARGIN_LOSS_MULTI_FORWARD || MODE == MARGIN_LOSS_MULTI_BACKWARD) {
    uint y = uint(BufI64(pc.target).v[i]);
    float xy = xs(row + y);
    float wy = (pc.flags & MARGIN_LOSS_WEIGHT) != 0u ? BufF32(pc.weight).v[y] : 1.0;
    float g = MODE == MARGIN_LOSS_MULTI_BACKWARD ? BufF32(pc.grad_fac).v[i] * inv_c : 0.0;
    float sum = 0.0, gy = 0.0;
    for (uint j = 0u; j < pc.c; ++j) {
      if (j == y) continue;
      float z = pc.margin - xy + xs(row + j);
      float h = 0.0;
      if (z > 0.0) {
        if (MODE == MARGIN_LOSS_MULTI_FORWARD) {
          sum += (pc.p == 1u ? z : z * z) * wy;
        } else {
          h = (pc.p == 1u ? g : 2.0 * g * z) * wy;
          gy -= h;
        }
      }
      if (MODE == MARGIN_LOSS_MULTI_BACKWARD) BufF32(pc.grad_in).v[row + j] = h;
    }
    if (MODE == MARGIN_LOSS_MULTI_FORWARD) BufF32(pc.loss).v[i] = sum * inv_c;
    else BufF32(pc.grad_in).v[row + y] = gy;
  } else {  // MARGIN_LOSS_MULTILABEL_FORWARD or MARGIN_LOSS_MULTILABEL_BACKWARD
    BufF32 is_t = BufF32(pc.is_target);
    if (MODE == MARGIN_LOSS_MULTILABEL_FORWARD) {
      for (uint k = 0u; k < pc.c; ++k) is_t.v[row + k] = 0.0;
      for (uint j = 0u; j < pc.c; ++j) {
        int64_t t = BufI64(pc.target).v[row + j];
        if (t < 0) break;
        is_t.v[row + uint(t)] = 1.0;
      }
    } else {
      for (uint k = 0u; k < pc.c; ++k) BufF32(pc.grad_in).v[row + k] = 0.0;
    }
    float g = MODE == MARGIN_LOSS_MULTILABEL_BACKWARD ? BufF32(pc.grad_fac).v[i] * inv_c : 0.0;
    float sum = 0.0;
    for (uint j = 0u; j < pc.c; ++j) {
      int64_t t = BufI64(pc.target).v[row + j];
      if (t < 0) break;
      uint tj = uint(t);
      float xt = xs(row + tj);
      for (uint k = 0u; k < pc.c; ++k) {
        if (is_t.v[row + k] != 0.0) continue;
        float z = 1.0 - xt + xs(row + k);
        if (z > 0.0) {
          if (MODE == MARGIN_LOSS_MULTILABEL_FORWARD) {
            sum += z;
          } else {
            BufF32(pc.grad_in).v[row + tj] -= g;
            BufF32(pc.grad_in).v[row + k] += g;
          }
        }
      }
    }
    if (MODE == MARGIN_LOSS_MULTILABEL_FORWARD) BufF32(pc.loss).v[i] = sum * inv_c;
  }
}
