#version 450
// Connectionist temporal classification loss (Graves et al. 2006) in log space, one
// workgroup per batch element, its threads over the 2 * S + 1 positions of the
// extended label sequence (blank, l1, blank, l2, ..., blank), each thread looping
// over positions when there are more than threads. Step t of a recursion needs all
// of step t - 1, so steps are separated by workgroup barriers; the previous step is
// read back from memory the workgroup itself wrote (coherent buffers), which lets a
// target of any length run without a shared-memory limit.
//
// Forward (MODE CTC_FORWARD): log_alpha[n, t, s] for t < input length (-inf beyond,
// and for s past the sample's own 2 * target length + 1), and the negative log
// likelihood from the last two positions at the last step.
// Backward (MODE CTC_BACKWARD): log_beta from the last step down, two rows in scratch;
// after each step's beta, the step's gradient row over the C labels:
//   grad[t, n, c] = (exp(lp) - exp(logsumexp_{s: label(s) = c} (alpha + beta) + nll - lp))
//                   * grad_out[n],
// zero for t >= input length and for a whole sample with an infinite loss under
// zero_infinity. The positions of a label are found through a list built once per
// sample (first target index of each label, then the next index of the same label),
// and the blank's (every even position) by a workgroup reduction, so a step costs
// O(S + C) work rather than O(S * C).
// Arithmetic follows ATen's CPU kernel (LossCTC.cpp) term by term: the three-term
// log-sum-exp around the largest term, 0 for it when all are -inf, and the pairwise
// log-add for collecting alpha + beta per label.
//! dtypes f32 f64
#include "common.glsl"
#include "ctc_loss_push.h"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = CTC_FORWARD;
layout(constant_id = 1) const uint WG = 256;

#if defined(ST_F64)
#include "f64_math.glsl"
#define REAL double
#define EXP exp_d
#define LOG log_d
#define NEG_INF (-1.0LF / 0.0LF)
#define NAN_R (0.0LF / 0.0LF)
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufR { double v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 8) coherent buffer CohR { double v[]; };
#else
#define REAL float
#define EXP exp
#define LOG log
#define NEG_INF uintBitsToFloat(0xff800000u)
#define NAN_R uintBitsToFloat(0x7fc00000u)
#define BufR BufF32
layout(buffer_reference, scalar, buffer_reference_align = 4) coherent buffer CohR { float v[]; };
#endif
layout(buffer_reference, scalar, buffer_reference_align = 4) coherent buffer CohI32 { int v[]; };

shared REAL s_part[WG];

uint g_n;        // this workgroup's sample
uint g_toff;     // its first label in targets
uint g_tl;       // its target length
uint g_lp_base;  // log_probs offset of (t = 0, n, c = 0)

// Writes by this workgroup become visible to all of it.
void sync_workgroup() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}

// The label of extended position s (blank at even positions).
int64_t label_at(uint s) {
  if ((s & 1u) == 0u) return int64_t(pc.blank);
  return BufI64(pc.targets).v[g_toff + (s >> 1)];
}

// log_probs[t, n, c]; NaN for a label outside [0, C) (ATen does not check targets:
// its CPU kernel would read out of bounds). The index is clamped before the load, as a
// driver may run a load whose branch is not taken.
REAL lp_at(uint t, int64_t c) {
  bool ok = c >= 0 && c < int64_t(pc.c);
  uint ci = ok ? uint(c) : 0u;
  REAL v = BufR(pc.log_probs).v[g_lp_base + t * pc.lp_stride_t + ci * pc.lp_stride_c];
  return ok ? v : NAN_R;
}

// log(exp(a) + exp(b) + exp(c)), around the largest term (0 if all are -inf: no -inf - -inf).
REAL log_sum3(REAL a, REAL b, REAL c) {
  REAL m = max(a, max(b, c));
  if (m == NEG_INF) m = REAL(0);
  return LOG(EXP(a - m) + EXP(b - m) + EXP(c - m)) + m;
}

// acc "log+=" x, the pairwise form ATen collects alpha + beta with.
REAL log_add(REAL acc, REAL x) {
  if (acc == NEG_INF) return x;
  REAL m = max(acc, x);
  return LOG(EXP(acc - m) + EXP(x - m)) + m;
}

void forward(uint il) {
  const uint L = 2u * g_tl + 1u;
  const uint la_base = g_n * pc.t_len * pc.l;
  CohR la = CohR(pc.log_alpha);
  const uint tid = gl_LocalInvocationID.x;
  if (il > 0u) {
    for (uint s = tid; s < pc.l; s += WG) {
      REAL v = NEG_INF;
      if (s == 0u) v = lp_at(0u, int64_t(pc.blank));
      if (s == 1u && g_tl > 0u) v = lp_at(0u, label_at(1u));
      la.v[la_base + s] = v;
    }
    sync_workgroup();
    for (uint t = 1u; t < il; ++t) {
      const uint prev = la_base + (t - 1u) * pc.l, cur = prev + pc.l;
      for (uint s = tid; s < pc.l; s += WG) {
        REAL v = NEG_INF;
        if (s < L) {
          int64_t lab = label_at(s);
          REAL la1 = la.v[prev + s];
          REAL la2 = s > 0u ? la.v[prev + s - 1u] : NEG_INF;
          REAL la3 = s > 1u && label_at(s - 2u) != lab ? la.v[prev + s - 2u] : NEG_INF;
          v = log_sum3(la1, la2, la3) + lp_at(t, lab);
        }
        la.v[cur + s] = v;
      }
      sync_workgroup();
    }
  }
  for (uint t = il; t < pc.t_len; ++t)
    for (uint s = tid; s < pc.l; s += WG) la.v[la_base + t * pc.l + s] = NEG_INF;
  if (tid == 0u) {
    REAL nll;
    if (il == 0u) {
      nll = g_tl == 0u ? REAL(0) : -NEG_INF;
    } else {
      const uint last = la_base + (il - 1u) * pc.l;
      if (g_tl == 0u) {
        nll = -la.v[last];
      } else {
        REAL l1 = la.v[last + 2u * g_tl], l2 = la.v[last + 2u * g_tl - 1u];
        REAL m = max(l1, l2);
        if (m == NEG_INF) m = REAL(0);
        nll = -(LOG(EXP(l1 - m) + EXP(l2 - m)) + m);
      }
    }
    BufR(pc.nll).v[g_n] = nll;
  }
}

void backward(uint il) {
  const uint tid = gl_LocalInvocationID.x;
  const REAL nll = BufR(pc.nll).v[g_n];
  BufR grad = BufR(pc.grad);
  const uint row = pc.n * pc.c;  // grad's t stride
  if ((pc.flags & CTC_ZERO_INFINITY) != 0u && nll == -NEG_INF) {
    for (uint t = 0u; t < pc.t_len; ++t)
      for (uint c = tid; c < pc.c; c += WG) grad.v[t * row + g_n * pc.c + c] = REAL(0);
    return;
  }
  const REAL gr = BufR(pc.grad_out).v[g_n * pc.grad_out_stride];
  const uint L = 2u * g_tl + 1u;
  const uint smax = (pc.l - 1u) / 2u;
  CohI32 first = CohI32(pc.groups);
  const uint first_base = g_n * pc.c;
  const uint next_base = pc.n * pc.c + g_n * smax;

  // The label lists: first[c] = first target index with label c (-1: none),
  // next[j] = the next index after j with j's label (-1: none).
  for (uint c = tid; c < pc.c; c += WG) first.v[first_base + c] = -1;
  sync_workgroup();
  for (uint j = tid; j < g_tl; j += WG) {
    int64_t lab = label_at(2u * j + 1u);
    bool is_first = true;
    int nxt = -1;
    for (uint k = 0u; k < g_tl; ++k) {
      if (k == j || label_at(2u * k + 1u) != lab) continue;
      if (k < j) is_first = false;
      if (k > j && nxt < 0) nxt = int(k);
    }
    first.v[next_base + j] = nxt;
    if (is_first && lab >= 0 && lab < int64_t(pc.c)) first.v[first_base + uint(lab)] = int(j);
  }

  BufR la = BufR(pc.log_alpha);
  const uint la_base = g_n * pc.t_len * pc.l;
  CohR beta = CohR(pc.beta);
  const uint beta_base = g_n * 3u * pc.l;
  const uint ab_base = beta_base + 2u * pc.l;  // this step's alpha + beta
  for (int ti = int(il) - 1; ti >= 0; --ti) {
    const uint t = uint(ti);
    const uint cur = beta_base + (t & 1u) * pc.l, nxt = beta_base + ((t & 1u) ^ 1u) * pc.l;
    REAL part = NEG_INF;  // this thread's share of the blank's (even positions') sum
    for (uint s = tid; s < L; s += WG) {
      int64_t lab = label_at(s);
      REAL b;
      if (t + 1u == il) {
        b = s == 2u * g_tl || s + 1u == 2u * g_tl ? lp_at(t, lab) : NEG_INF;
      } else {
        REAL lb1 = beta.v[nxt + s];
        REAL lb2 = s < 2u * g_tl ? beta.v[nxt + s + 1u] : NEG_INF;
        REAL lb3 = s + 1u < 2u * g_tl && label_at(s + 2u) != lab ? beta.v[nxt + s + 2u] : NEG_INF;
        b = log_sum3(lb1, lb2, lb3) + lp_at(t, lab);
      }
      beta.v[cur + s] = b;
      REAL ab = la.v[la_base + t * pc.l + s] + b;
      beta.v[ab_base + s] = ab;
      if ((s & 1u) == 0u) part = log_add(part, ab);
    }
    s_part[tid] = part;
    sync_workgroup();
    for (uint half_wg = WG / 2u; half_wg > 0u; half_wg /= 2u) {
      if (tid < half_wg) s_part[tid] = log_add(s_part[tid], s_part[tid + half_wg]);
      barrier();
    }
    const REAL blank_sum = s_part[0];
    for (uint c = tid; c < pc.c; c += WG) {
      REAL res = c == pc.blank ? blank_sum : NEG_INF;
      for (int j = first.v[first_base + c]; j >= 0; j = first.v[next_base + uint(j)])
        res = log_add(res, beta.v[ab_base + 2u * uint(j) + 1u]);
      REAL lp = lp_at(t, int64_t(c));
      grad.v[t * row + g_n * pc.c + c] = (EXP(lp) - EXP(res + nll - lp)) * gr;
    }
    // The next step overwrites this step's alpha + beta and s_part.
    barrier();
  }
  for (uint t = il; t < pc.t_len; ++t)
    for (uint c = tid; c < pc.c; c += WG) grad.v[t * row + g_n * pc.c + c] = REAL(0);
}

void main() {
  g_n = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (g_n >= pc.n) return;
  BufI64 lengths = BufI64(pc.lengths);
  const uint il = uint(lengths.v[3u * g_n]);
  g_tl = uint(lengths.v[3u * g_n + 1u]);
  g_toff = uint(lengths.v[3u * g_n + 2u]);
  g_lp_base = g_n * pc.lp_stride_n;
  if (MODE == CTC_FORWARD)
    forward(il);
  else
    backward(il);
}
