#version 450
// Fused optimizer steps over a whole list of parameters in one dispatch
// (PyTorch's _fused_adam_, _fused_adamw_, _fused_sgd_ and _fused_adagrad_). A table in
// host-visible memory holds one record per parameter; each workgroup updates
// one block of BLOCK elements of one parameter, found by binary search on the
// records' first block. fp32 math for f32, f16 and bf16 storage; double for f64, with
// the hyperparameters as doubles (their bits in the push constants) and a float64
// learning-rate tensor.
//
// Specialization constant 0 = rule: 0 Adam, 1 AdamW (decoupled weight decay),
// 2 SGD, 3 Adagrad. The variant is the storage dtype of params, grads and state.
//! dtypes f32 f16 bf16 f64
#ifdef ST_BF16
#define NEED_I16  // bf16 bits move through int16 arithmetic
#endif
#include "common.glsl"
#include "optim_push.h"

const uint WG = OPTIM_WG;
const uint ITEMS = OPTIM_ITEMS;
const uint BLOCK = WG * ITEMS;
layout(local_size_x = WG) in;
layout(constant_id = 0) const int RULE = 0;

layout(buffer_reference, scalar, buffer_reference_align = 8) readonly buffer Table {
  Record r[];
};

#if defined(ST_F64)
#include "f64_math.glsl"
#define FT double
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufF64 { double v[]; };
FT ld(uint64_t p, uint i) { return BufF64(p).v[i]; }
void st(uint64_t p, uint i, FT v) { BufF64(p).v[i] = v; }
#define LR uint64BitsToDouble(pc.lr_bits)
#define BETA1 uint64BitsToDouble(pc.beta1_bits)
#define BETA2 uint64BitsToDouble(pc.beta2_bits)
#define WEIGHT_DECAY uint64BitsToDouble(pc.weight_decay_bits)
#define EPS uint64BitsToDouble(pc.eps_bits)
// beta^step for a whole step count >= 1
FT power(FT beta, FT step) { return beta == 0.0LF ? 0.0LF : exp_d(step * log_d(beta)); }
#else
#define FT float
#if defined(ST_F16)
float ld(uint64_t p, uint i) { return float(BufF16(p).v[i]); }
void st(uint64_t p, uint i, float v) { BufF16(p).v[i] = float16_t(v); }
#elif defined(ST_BF16)
float ld(uint64_t p, uint i) { return bf16_to_f32(uint(BufU16(p).v[i])); }
void st(uint64_t p, uint i, float v) { BufU16(p).v[i] = uint16_t(f32_to_bf16(v)); }
#else
float ld(uint64_t p, uint i) { return BufF32(p).v[i]; }
void st(uint64_t p, uint i, float v) { BufF32(p).v[i] = v; }
#endif
#define LR pc.lr
#define BETA1 pc.beta1
#define BETA2 pc.beta2
#define WEIGHT_DECAY pc.weight_decay
#define EPS pc.eps
float power(float beta, float step) { return pow(beta, step); }
#endif

uint find_record(uint block) {
  uint lo = 0, hi = pc.count - 1;
  while (lo < hi) {
    uint mid = (lo + hi + 1) / 2;
    if (Table(pc.table).r[mid].first_block <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// The grad as the rule sees it: unscaled (and stored back unscaled, as PyTorch
// does), negated under maximize.
FT load_grad(Record rec, uint i, float scale) {
  FT g = ld(rec.grad, i);
  if (pc.grad_scale != 0) {
    g /= FT(scale);
    st(rec.grad, i, g);
  }
  return (pc.flags & OPTIM_MAXIMIZE) != 0 ? -g : g;
}

void adam(Record rec, uint i, FT lr, float scale, FT step) {
  FT p = ld(rec.param, i);
  FT g = load_grad(rec, i, scale);
  if (WEIGHT_DECAY != 0.0) {
    if (RULE == OPTIM_ADAMW)
      p -= lr * WEIGHT_DECAY * p;
    else
      g += WEIGHT_DECAY * p;
  }
  FT m = ld(rec.state0, i) * BETA1 + g * (FT(1.0) - BETA1);
  FT v = ld(rec.state1, i) * BETA2 + g * g * (FT(1.0) - BETA2);
  st(rec.state0, i, m);
  st(rec.state1, i, v);
  if ((pc.flags & OPTIM_AMSGRAD) != 0) {
    v = max(ld(rec.state2, i), v);
    st(rec.state2, i, v);
  }
  FT bias1 = FT(1.0) - power(BETA1, step);
  FT bias2_sqrt = sqrt(FT(1.0) - power(BETA2, step));
  FT denom = sqrt(v) / bias2_sqrt + EPS;
  st(rec.param, i, p - (lr / bias1) * m / denom);
}

void sgd(Record rec, uint i, FT lr, float scale) {
  FT p = ld(rec.param, i);
  FT g = load_grad(rec, i, scale);
  if (WEIGHT_DECAY != 0.0) g += WEIGHT_DECAY * p;
  if (rec.state0 != 0) {
    FT buf = (pc.flags & OPTIM_FIRST_STEP) != 0
                 ? g
                 : ld(rec.state0, i) * BETA1 + (FT(1.0) - BETA2) * g;
    st(rec.state0, i, buf);
    g = (pc.flags & OPTIM_NESTEROV) != 0 ? g + BETA1 * buf : buf;
  }
  st(rec.param, i, p - lr * g);
}

void adagrad(Record rec, uint i, FT lr, float scale, FT step) {
  FT p = ld(rec.param, i);
  FT g = load_grad(rec, i, scale);
  if (WEIGHT_DECAY != 0.0) g += WEIGHT_DECAY * p;
  FT sum = ld(rec.state0, i) + g * g;
  st(rec.state0, i, sum);
  FT clr = lr / (FT(1.0) + (step - FT(1.0)) * BETA1);  // beta1 = lr_decay
  st(rec.param, i, p - clr * g / (sqrt(sum) + EPS));
}

// The float at `p`, or `absent` where p is 0. The load reads the table when p is
// 0 rather than sitting behind a branch: a driver may run a load whose branch
// is not taken (Mesa 26's lavapipe does, for uniform addresses).
float load_or(uint64_t p, float absent) {
  float v = BufF32(p != 0 ? p : pc.table).v[0];
  return p != 0 ? v : absent;
}
// The learning rate: the tensor's (in the parameters' dtype) where there is one.
FT learning_rate() {
#if defined(ST_F64)
  FT v = BufF64(pc.lr_ptr != 0 ? pc.lr_ptr : pc.table).v[0];
#else
  FT v = BufF32(pc.lr_ptr != 0 ? pc.lr_ptr : pc.table).v[0];
#endif
  return pc.lr_ptr != 0 ? v : LR;
}

void main() {
  if (load_or(pc.found_inf, 0.0) != 0.0) return;
  uint block = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  Record rec = Table(pc.table).r[find_record(block)];
  FT lr = learning_rate();
  float scale = load_or(pc.grad_scale, 1.0);
  FT step = RULE == OPTIM_SGD ? FT(0.0) : FT(BufF32(rec.step).v[0]);
  uint base = (block - rec.first_block) * BLOCK + gl_LocalInvocationID.x;
  for (uint k = 0; k < ITEMS; ++k) {
    uint i = base + k * WG;
    if (i >= rec.numel) break;
    if (RULE == OPTIM_SGD)
      sgd(rec, i, lr, scale);
    else if (RULE == OPTIM_ADAGRAD)
      adagrad(rec, i, lr, scale, step);
    else
      adam(rec, i, lr, scale, step);
  }
}
