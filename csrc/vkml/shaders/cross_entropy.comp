#version 450
// Cross entropy of [n, c] class scores with int64 targets, fused: the scores are read
// once forward and once backward, and no [n, c] log-probabilities are stored.
//
// With w the class weights (all ones without a weight), e the label smoothing and
// lse_i the log-sum-exp of row i, a counted row's loss is
//   (1 - e) w[t] (lse - x[t]) + (e / c) sum_j w[j] (lse - x[j])
// (rows whose target is ignore_index count 0 and weigh 0), and its gradient
//   (1 - e) w[t] (p[j] - [j == t]) + (e / c) (W p[j] - w[j]),  p = exp(x - lse),
// W = sum_j w[j]. A mean divides by the summed w[t] of the counted rows: that is the
// nll_loss denominator, and the label-smoothing term's too.
//
// Specialization constant 0 = mode:
//   0 rows: one workgroup per row; writes lse[i] (fp32) and the row's loss (into the
//     output for reduction none, else into the fp32 row scratch);
//   1 reduce: one workgroup sums the row losses and the counted weights in a fixed
//     order, writes the output and total_weight (fp32);
//   2 backward: one workgroup per row of grad_input.
// Constant 1 = workgroup size. A target out of [0, c) that is not ignore_index makes
// its row's loss and gradient NaN.
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "device_error.glsl"
#include "float_store.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 256;

#define NAN_F uintBitsToFloat(0x7fc00000u)
#define NEG_INF uintBitsToFloat(0xff800000u)

#include "cross_entropy_push.h"

float weight_of(uint j) { return (pc.flags & CROSS_ENTROPY_WEIGHT) != 0u ? LD(pc.weight, j) : 1.0; }

float weight_total() {
  return (pc.flags & CROSS_ENTROPY_WEIGHT_SUM) != 0u ? BufF32(pc.weight_sum).v[0] : float(pc.c);
}

// The weight of a counted row's target: NaN for a target out of range.
float target_weight(int64_t t) {
  bool in_range = t >= 0 && t < int64_t(pc.c);
  float w = weight_of(in_range ? uint(t) : 0u);  // loaded in range whichever way it goes
  return in_range ? w : NAN_F;
}

// a / b with IEEE's answers for b == 0, which Vulkan leaves undefined.
float divide(float a, float b) {
  if (b != 0.0) return a / b;
  return (a == 0.0 || isnan(a)) ? NAN_F : a * uintBitsToFloat(0x7f800000u);
}

shared float s_m[WG];
shared float s_s[WG];
shared float s_x[WG];  // sum of w[j] x[j] (label smoothing)

// Running max and the sum of exp(x - max), with one exp per element below the max
// (most of them). NaN and +inf make the sum NaN, as log_softmax's is.
void online_add(inout float m, inout float s, float x) {
  if (x > m || isnan(x)) {
    s = (isinf(x) || isnan(x)) ? NAN_F : s * exp(m - x) + 1.0;
    m = x;
  } else if (x != NEG_INF) {
    s += exp(x - m);
  }
}

void online_merge(inout float m, inout float s, float m2, float s2) {
  float mn = (isnan(m2) || m2 > m) ? m2 : m;
  float f1 = (m == mn) ? 1.0 : exp(m - mn);
  float f2 = (m2 == mn) ? 1.0 : exp(m2 - mn);
  s = s * f1 + s2 * f2;
  m = mn;
}

void rows_forward() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= pc.n) return;  // uniform across the workgroup
  uint tid = gl_LocalInvocationID.x;
  uint base = row * pc.c;
  bool smoothed = pc.smoothing != 0.0;
  float m = NEG_INF, s = 0.0, sx = 0.0;
  for (uint j = tid; j < pc.c; j += WG) {
    float x = LD(pc.scores, base + j);
    online_add(m, s, x);
    if (smoothed) sx += weight_of(j) * x;
  }
  s_m[tid] = m;
  s_s[tid] = s;
  s_x[tid] = sx;
  barrier();
  for (uint step = WG / 2; step > 0; step >>= 1) {
    if (tid < step) {
      online_merge(m, s, s_m[tid + step], s_s[tid + step]);
      s_m[tid] = m;
      s_s[tid] = s;
      sx += s_x[tid + step];
      s_x[tid] = sx;
    }
    barrier();
  }
  if (tid != 0) return;
  // A row of -inf only has no log-sum-exp (log(0) is undefined in Vulkan): NaN, as
  // log_softmax gives.
  float lse = s_s[0] > 0.0 ? s_m[0] + log(s_s[0]) : NAN_F;
  BufF32(pc.lse).v[row] = lse;
  int64_t t = BufI64(pc.target).v[row];
  float loss = 0.0;
  if (t != pc.ignore_index) {
    float wt = target_weight(t);
    if (gl_LocalInvocationID.x == 0u && (t < 0 || t >= int64_t(pc.c)))
      report_device_error(pc.errors, DEVICE_ERROR_TARGET, t, int64_t(pc.c), 0u);
    float xt = isnan(wt) ? NAN_F : LD(pc.scores, base + uint(t));
    loss = (1.0 - pc.smoothing) * wt * (lse - xt);
    if (smoothed) loss += pc.smoothing / float(pc.c) * (weight_total() * lse - s_x[0]);
  }
  if (pc.reduction == LOSS_REDUCTION_NONE) {
    STORE(pc.dst, row, loss);
  } else {
    BufF32(pc.rows).v[row] = loss;
  }
}

void reduce_rows() {
  uint tid = gl_LocalInvocationID.x;
  float loss = 0.0, tw = 0.0;
  for (uint i = tid; i < pc.n; i += WG) {
    loss += BufF32(pc.rows).v[i];
    int64_t t = BufI64(pc.target).v[i];
    if (t != pc.ignore_index) tw += target_weight(t);
  }
  s_s[tid] = loss;
  s_x[tid] = tw;
  barrier();
  for (uint step = WG / 2; step > 0; step >>= 1) {
    if (tid < step) {
      s_s[tid] += s_s[tid + step];
      s_x[tid] += s_x[tid + step];
    }
    barrier();
  }
  if (tid != 0) return;
  tw = s_x[0];
  loss = s_s[0];
  if (pc.reduction == LOSS_REDUCTION_MEAN) loss = divide(loss, tw);
  BufF32(pc.total).v[0] = tw;
  STORE(pc.dst, 0u, loss);
}

void backward() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= pc.n) return;
  uint base = row * pc.c;
  int64_t t = BufI64(pc.target).v[row];
  if (t == pc.ignore_index) {
    for (uint j = gl_LocalInvocationID.x; j < pc.c; j += WG) STORE(pc.grad_input, base + j, 0.0);
    return;
  }
  float g = LD(pc.dst, pc.reduction == LOSS_REDUCTION_NONE ? row : 0u);
  if (pc.reduction == LOSS_REDUCTION_MEAN) g = divide(g, BufF32(pc.total).v[0]);
  float lse = BufF32(pc.lse).v[row];
  // d loss / d x[j] = a p[j] - b[j]: a sums both terms' p coefficients.
  float wt = target_weight(t) * (1.0 - pc.smoothing);
  float ws = pc.smoothing / float(pc.c);
  float a = g * (wt + ws * weight_total());
  for (uint j = gl_LocalInvocationID.x; j < pc.c; j += WG) {
    float v = a * exp(LD(pc.scores, base + j) - lse);
    if (pc.smoothing != 0.0) v -= g * ws * weight_of(j);
    if (int64_t(j) == t) v -= g * wt;
    STORE(pc.grad_input, base + j, v);
  }
}

void main() {
  if (MODE == CROSS_ENTROPY_ROWS) {
    rows_forward();
  } else if (MODE == CROSS_ENTROPY_REDUCE) {
    reduce_rows();
  } else {
    backward();
  }
}
