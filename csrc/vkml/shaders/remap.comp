#version 450
// Gather with a per-dim index map: out[i] = in[m_0(i_0), ..., m_5(i_5)] over up
// to six dims (innermost first), out contiguous, in strided. The map of each dim
// (4 bits of `modes`) is one of the REMAP_* modes: flip, roll, constant/reflect/
// replicate/circular padding, nearest-neighbour resampling, integer division
// (repeat_interleave). Elements that map outside the input (constant padding)
// are zero.
//
// The bwd variant is the adjoint for float32: grad_in[m(i)] += grad_out[i] with
// an atomic compare-and-swap add (portable: only 32-bit integer atomics needed);
// grad_in must be zeroed, contiguous with strides `istride`.
//! widths 1 2 4 8
//! variant bwd -DBWD
#include "common.glsl"
#ifndef BWD
#include "elem_bytes.glsl"
#endif

#include "remap_push.h"

const uint WG = REMAP_WG;
layout(local_size_x = WG) in;

// Input index of output index i along one dim, or -1 for "outside" (zero).
int map_index(uint mode, int i, int n, int p) {
  switch (mode) {
    case REMAP_FLIP: return n - 1 - i;
    case REMAP_ROLL: return (i + n - p) % n;  // p in [0, n)
    case REMAP_CONSTANT: {
      int k = i - p;
      return (k < 0 || k >= n) ? -1 : k;
    }
    case REMAP_REFLECT: {
      int k = i - p;
      if (k < 0) k = -k;
      if (k >= n) k = 2 * (n - 1) - k;
      return k;
    }
    case REMAP_REPLICATE: return clamp(i - p, 0, n - 1);
    case REMAP_CIRCULAR: {
      int k = i - p;  // GLSL leaves % of negatives undefined
      if (k < 0) k += n * ((n - 1 - k) / n);
      return k % n;
    }
    case REMAP_NEAREST: return min(int(floor(float(i) * intBitsToFloat(p))), n - 1);
    case REMAP_NEAREST_EXACT:
      return min(int(floor((float(i) + 0.5) * intBitsToFloat(p))), n - 1);
    case REMAP_DIV: return i / p;
    default: return i;
  }
}

#ifdef BWD
#include "atomic_float_add.glsl"
#define atomic_add(off, v) atomic_add_f32(pc.dst, off, v)
#endif

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  uint r = t;
  int off = 0;
  for (int d = 0; d < pc.ndim; ++d) {
    int i = int(r % uint(pc.osize[d]));
    r /= uint(pc.osize[d]);
    int j = map_index((pc.modes >> (4 * d)) & 15u, i, pc.isize[d], pc.param[d]);
    if (j < 0) {
#ifndef BWD
      EBUF(pc.dst).v[t] = ETYPE(0);
#endif
      return;
    }
    off += j * pc.istride[d];
  }
#ifdef BWD
  atomic_add(uint(off), BufF32(pc.src).v[t]);
#else
  EBUF(pc.dst).v[t] = EBUF(pc.src).v[off];
#endif
}
