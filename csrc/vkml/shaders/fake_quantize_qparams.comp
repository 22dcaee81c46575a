#version 450
// The qparams of fused fake quantization, one thread a channel: the moving-average
// min/max observer, then scale and zero point chosen from the running range as PyTorch's
// CPU chooses them (fbgemm's ChooseQuantizationParams: symmetric ranges widened to the
// grid's, the range extended to hold 0, a float scale with a floor of 6.1e-5, the zero
// point from whichever end adds less error, nudged to an integer). That arithmetic is in
// double in the f64 variant, matching the CPU bit for bit; devices without float64 run the
// f32 variant, which can differ in the last bit of the scale. Also: reciprocals of scales.
//! variant f64 -DUSE_F64
//! variant f32
#include "common.glsl"
#include "fake_quantize_reciprocal.glsl"

#define FAKE_QUANTIZE_QPARAMS_KERNEL
#include "fake_quantize_push.h"

const uint WG = FAKE_QUANTIZE_WG;
layout(local_size_x = WG) in;

#ifdef USE_F64
#define REAL double
#else
#define REAL float
#endif
const float SMALL_SCALE = 6.1e-5;  // float16's smallest normal, as the CPU uses

// nearbyint from floor: lavapipe (Mesa 22.3) lowers a double roundEven to a truncation.
REAL nearest_even(REAL a) {
  REAL r = floor(a), d = a - r;
  return d > REAL(0.5) || (d == REAL(0.5) && mod(r, REAL(2)) != REAL(0)) ? r + REAL(1) : r;
}

// a / b, correctly rounded as the CPU's: Vulkan lets a driver divide as a * (1 / b), off
// in the last bit, and a zero point that falls on a tie would move with it. The fma's
// residual corrects the quotient.
REAL div(REAL a, REAL b) {
  REAL q = a / b;
  if (isinf(q) || isnan(q) || q == REAL(0)) return q;
  return fma(fma(-q, b, a), REAL(1) / b, q);
}

// a / b rounded once to float (through double where there is one).
float div_f(float a, float b) { return float(div(REAL(a), REAL(b))); }

// The CPU's running-range update: a + c * (b - a) in float, not contracted into an fma.
float moving(float running, float current) {
  if (isinf(running)) return current;
  precise float step = pc.averaging_const * (current - running);
  precise float moved = running + step;
  return moved;
}

void choose(float mn, float mx, out float scale_out, out int zp_out) {
  const int qmin = pc.quant_min, qmax = pc.quant_max;
  const bool widen = pc.symmetric != 0u && mn < 0.0 && mx > 0.0;
  if (widen) {
    int sym_min = -((qmax - qmin) / 2 + 1), sym_max = (qmax - qmin) / 2;
    float most = max(abs(div_f(mn, float(sym_min))), abs(div_f(mx, float(sym_max))));
    mn = float(REAL(most) * REAL(sym_min));
    mx = float(REAL(most) * REAL(sym_max));
  }
  mn = min(mn, 0.0);
  mx = max(mx, 0.0);
  float scale = float(div(REAL(mx) - REAL(mn), REAL(qmax - qmin)));
  if (scale == 0.0 || isinf(exact_reciprocal(scale))) scale = 0.1;
  if (scale < SMALL_SCALE) {
    float original = scale;
    scale = SMALL_SCALE;
    if (mn == 0.0) {
      mx = SMALL_SCALE * float(qmax - qmin);
    } else if (mx == 0.0) {
      mn = -SMALL_SCALE * float(qmax - qmin);
    } else {
      float amplifier = div_f(SMALL_SCALE, original);
      mn *= amplifier;
      mx *= amplifier;
    }
  }
  // The zero point from the end whose terms add the smaller error.
  REAL lo = div(REAL(mn), REAL(scale)), hi = div(REAL(mx), REAL(scale));
  REAL from_min = REAL(qmin) - lo, from_max = REAL(qmax) - hi;
  REAL zp = REAL(abs(qmin)) + abs(lo) < REAL(abs(qmax)) + abs(hi) ? from_min : from_max;
  if (widen) zp = REAL(qmin + qmax) / REAL(2);
  zp_out = zp < REAL(qmin) ? qmin : zp > REAL(qmax) ? qmax : int(nearest_even(zp));
  scale_out = scale;
}

void main() {
  uint c = linear_id();
  if (c >= pc.channels) return;
  if (pc.mode == FAKE_QUANTIZE_RECIPROCALS) {
    BufF32(pc.inv_scale).v[c] = exact_reciprocal(BufF32(pc.scale).v[c]);
    return;
  }
  float lo = BufF32(pc.running_min).v[c], hi = BufF32(pc.running_max).v[c];
  if (BufI64(pc.observer_on).v[0] != 0l) {
    lo = moving(lo, BufF32(pc.x_min).v[c]);
    hi = moving(hi, BufF32(pc.x_max).v[c]);
    BufF32(pc.running_min).v[c] = lo;
    BufF32(pc.running_max).v[c] = hi;
  }
  if (BufI64(pc.fake_quant_on).v[0] == 0l) return;
  float scale;
  int zp;
  choose(lo, hi, scale, zp);
  BufF32(pc.scale).v[c] = scale;
  BufF32(pc.inv_scale).v[c] = exact_reciprocal(scale);
  BufI32(pc.zero_point).v[c] = zp;
}
