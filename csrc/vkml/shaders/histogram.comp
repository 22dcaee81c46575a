#version 450
// Counting into bins with atomics: histc over float32 values (mode 0), bincount
// of int64 values (mode 1), and bincount with float32 weights (mode 2). Counts are
// int32 (atomicAdd); weighted sums are float32 through a compare-and-swap loop (no
// float atomics needed). Bins must be zeroed first.
#include "common.glsl"

layout(constant_id = 0) const int MODE = 0;

#include "histogram_push.h"

const uint WG = HISTOGRAM_WG;
layout(local_size_x = WG) in;

void atomic_add_f32(uint off, float v) {
  BufU32 b = BufU32(pc.bins);
  uint old = b.v[off];
  while (true) {
    uint prev = atomicCompSwap(b.v[off], old, floatBitsToUint(uintBitsToFloat(old) + v));
    if (prev == old) break;
    old = prev;
  }
}

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  if (MODE == HISTOGRAM_HISTC) {
    float v = BufF32(pc.src).v[t];
    if (!(v >= pc.lo && v <= pc.hi)) return;  // also drops NaN
    // The CPU kernel's arithmetic (Histogram: linear interpolation), in float.
    int pos = int((v - pc.lo) * float(pc.nbins) / (pc.hi - pc.lo));
    if (pos >= int(pc.nbins)) pos = int(pc.nbins) - 1;
    atomicAdd(BufI32(pc.bins).v[pos], 1);
  } else {  // HISTOGRAM_BINCOUNT or HISTOGRAM_WEIGHTED_BINCOUNT
    uint pos = uint(BufI64(pc.src).v[t]);
    if (pos >= pc.nbins) return;  // checked on the host
    if (MODE == HISTOGRAM_BINCOUNT) atomicAdd(BufI32(pc.bins).v[pos], 1);
    else atomic_add_f32(pos, BufF32(pc.weights).v[t]);
  }
}
