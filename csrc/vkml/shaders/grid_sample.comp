#version 450
// grid_sampler_2d / grid_sampler_3d and their backward over contiguous float32 or float64
// input [n, c, d, h, w] (a 2-d input has d == 1) and grid [n, od, oh, ow, dims]
// ((x, y) or (x, y, z) in [-1, 1]). One thread per output location loops over the
// channels, so the taps and weights are computed once and the grid gradient sums
// the channels without atomics; the input gradient scatters with compare-and-swap
// adds. Index and weight rules follow PyTorch's kernels: bilinear / trilinear and
// nearest (round half to even) with zeros / border / reflection padding applied to
// the sample point, bicubic (2-d only) with padding applied to each tap.
// The f64 variants compute in double; their input gradient adds with 64-bit
// compare-and-swap (shaderBufferInt64Atomics).
//! variant fwd
//! variant bwd -DBWD
//! variant fwd_f64 -DF64
//! variant bwd_f64 -DBWD -DF64
#if defined(F64) && defined(BWD)
#extension GL_EXT_shader_atomic_int64 : require
#define ATOMIC_ADD_F64
#endif
#include "common.glsl"

#include "grid_sample_push.h"

#ifdef F64
#define R double
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BufR { double v[]; };
#else
#define R float
#define BufR BufF32
#endif

const uint WG = GRID_SAMPLE_WG;
layout(local_size_x = WG) in;

bool align() { return pc.align_corners != 0u; }

// Grid coordinate in [-1, 1] to a pixel coordinate, with d(pixel)/d(coordinate).
R unnormalize(R c, int size, out R mult) {
  if (align()) {
    mult = R(size - 1) * 0.5;
    return (c + 1.0) * 0.5 * R(size - 1);
  }
  mult = R(size) * 0.5;
  return ((c + 1.0) * R(size) - 1.0) * 0.5;
}

R clip(R x, int size, inout R g) {
  if (x <= 0.0) {
    g = 0.0;
    return 0.0;
  }
  R lim = R(size - 1);
  if (x >= lim) {
    g = 0.0;
    return lim;
  }
  return x;
}

// Reflects x into [twice_low / 2, twice_high / 2], multiplying g by the sign.
R reflect_coord(R x, int twice_low, int twice_high, inout R g) {
  if (twice_low == twice_high) {
    g = 0.0;
    return 0.0;
  }
  R lo = R(twice_low) * 0.5;
  R span = R(twice_high - twice_low) * 0.5;
  x -= lo;
  if (x < 0.0) {
    g = -g;
    x = -x;
  }
  R extra = mod(x, span);
  int flips = int(floor(x / span));
  if ((flips & 1) == 0) return extra + lo;
  g = -g;
  return span - extra + lo;
}

// Padding applied to a pixel coordinate (gradient factor into g).
R pad_coord(R x, int size, inout R g) {
  if (pc.padding == GRID_SAMPLE_BORDER) {
    x = clip(x, size, g);
  } else if (pc.padding == GRID_SAMPLE_REFLECTION) {
    x = align() ? reflect_coord(x, 0, 2 * (size - 1), g) : reflect_coord(x, -1, 2 * size - 1, g);
    x = clip(x, size, g);
  }
  // Far-out or non-finite coordinates become a sure out-of-bounds one.
  if (isnan(x) || isinf(x) || abs(x) > 2.0e9) x = -100.0;
  return x;
}

R cubic1(R x) { return ((-0.75 + 2.0) * x - (-0.75 + 3.0)) * x * x + 1.0; }
R cubic2(R x) { return ((-0.75 * x + 3.75) * x - 6.0) * x + 3.0; }
void cubic_coeffs(R t, out R w[4]) {
  w[0] = cubic2(t + 1.0);
  w[1] = cubic1(t);
  w[2] = cubic1(1.0 - t);
  w[3] = cubic2(2.0 - t);
}
// PyTorch's get_cubic_coefficients_grad (subtracted from the grid gradient).
void cubic_coeffs_grad(R t, out R w[4]) {
  const R A = -0.75;
  R x = -1.0 - t;
  w[0] = (-3.0 * A * x - 10.0 * A) * x - 8.0 * A;
  x = -t;
  w[1] = (-3.0 * (A + 2.0) * x - 2.0 * (A + 3.0)) * x;
  x = 1.0 - t;
  w[2] = (3.0 * (A + 2.0) * x - 2.0 * (A + 3.0)) * x;
  x = 2.0 - t;
  w[3] = (3.0 * A * x - 10.0 * A) * x + 8.0 * A;
}

// Taps: plane offset (-1 when out of bounds), weight and the weight's partial
// derivatives along x, y, z (pixel units).
const int MAX_TAPS = 16;
int t_off[MAX_TAPS];
R t_w[MAX_TAPS], t_dx[MAX_TAPS], t_dy[MAX_TAPS], t_dz[MAX_TAPS];
int ntaps = 0;

void add_tap(int z, int y, int x, R w, R dx, R dy, R dz) {
  bool inside = x >= 0 && y >= 0 && z >= 0 && x < int(pc.iw) && y < int(pc.ih) && z < int(pc.id);
  t_off[ntaps] = inside ? (z * int(pc.ih) + y) * int(pc.iw) + x : -1;
  t_w[ntaps] = w;
  t_dx[ntaps] = dx;
  t_dy[ntaps] = dy;
  t_dz[ntaps] = dz;
  ++ntaps;
}

#ifdef BWD
#include "atomic_float_add.glsl"
#ifdef F64
#define atomic_add(off, v) atomic_add_f64(pc.grad_input, off, v)
#else
#define atomic_add(off, v) atomic_add_f32(pc.grad_input, off, v)
#endif
#endif

void main() {
  uint t = linear_id();
  uint spatial = pc.od * pc.oh * pc.ow;
  if (t >= pc.n * spatial) return;
  uint b = t / spatial;
  uint s = t - b * spatial;
  uint g0 = t * pc.dims;
  BufR grid = BufR(pc.grid);
  R mx, my, mz = 0.0;
  R ix = unnormalize(grid.v[g0], int(pc.iw), mx);
  R iy = unnormalize(grid.v[g0 + 1u], int(pc.ih), my);
  R iz = pc.dims == 3u ? unnormalize(grid.v[g0 + 2u], int(pc.id), mz) : 0.0;
  if (pc.mode == GRID_SAMPLE_BICUBIC) {
    R fx = floor(ix), fy = floor(iy);
    R wx[4], wy[4], gx[4], gy[4];
    cubic_coeffs(ix - fx, wx);
    cubic_coeffs(iy - fy, wy);
    cubic_coeffs_grad(ix - fx, gx);
    cubic_coeffs_grad(iy - fy, gy);
    for (int j = 0; j < 4; ++j) {
      R unused = 1.0;
      int y = int(pad_coord(fy - 1.0 + R(j), int(pc.ih), unused));
      for (int i = 0; i < 4; ++i) {
        int x = int(pad_coord(fx - 1.0 + R(i), int(pc.iw), unused));
        add_tap(0, y, x, wx[i] * wy[j], -gx[i] * wy[j], -wx[i] * gy[j], 0.0);
      }
    }
  } else {
    R px = 1.0, py = 1.0, pz = 1.0;  // padding's gradient factors
    ix = pad_coord(ix, int(pc.iw), px);
    iy = pad_coord(iy, int(pc.ih), py);
    if (pc.dims == 3u) iz = pad_coord(iz, int(pc.id), pz);
    mx *= px;
    my *= py;
    mz *= pz;
    if (pc.mode == GRID_SAMPLE_NEAREST) {
      add_tap(int(roundEven(iz)), int(roundEven(iy)), int(roundEven(ix)), 1.0, 0.0, 0.0, 0.0);
    } else {
      R x0 = floor(ix), y0 = floor(iy), z0 = floor(iz);
      R wx[2] = R[2](x0 + 1.0 - ix, ix - x0);
      R wy[2] = R[2](y0 + 1.0 - iy, iy - y0);
      R wz[2] = R[2](z0 + 1.0 - iz, iz - z0);
      if (pc.dims == 2u) wz = R[2](1.0, 0.0);
      const R sg[2] = R[2](-1.0, 1.0);
      int nz = pc.dims == 3u ? 2 : 1;
      for (int dz = 0; dz < nz; ++dz)
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx)
            add_tap(int(z0) + dz, int(y0) + dy, int(x0) + dx, wz[dz] * wy[dy] * wx[dx],
                    wz[dz] * wy[dy] * sg[dx], wz[dz] * sg[dy] * wx[dx], sg[dz] * wy[dy] * wx[dx]);
    }
  }
  uint plane = pc.id * pc.ih * pc.iw;
  uint in_base = b * pc.c * plane;
  uint out_base = b * pc.c * spatial + s;
  BufR inp = BufR(pc.src);
#ifdef BWD
  R ggx = 0.0, ggy = 0.0, ggz = 0.0;
  for (uint ch = 0u; ch < pc.c; ++ch) {
    R go = BufR(pc.dst).v[out_base + ch * spatial];
    uint ib = in_base + ch * plane;
    for (int k = 0; k < ntaps; ++k) {
      if (t_off[k] < 0) continue;
      uint off = ib + uint(t_off[k]);
      if ((pc.flags & GRID_SAMPLE_GRAD_INPUT) != 0u && t_w[k] != 0.0) atomic_add(off, go * t_w[k]);
      if ((pc.flags & GRID_SAMPLE_GRAD_GRID) != 0u) {
        R v = inp.v[off] * go;
        ggx += v * t_dx[k];
        ggy += v * t_dy[k];
        ggz += v * t_dz[k];
      }
    }
  }
  if ((pc.flags & GRID_SAMPLE_GRAD_GRID) != 0u) {
    BufR gg = BufR(pc.grad_grid);
    gg.v[g0] = ggx * mx;
    gg.v[g0 + 1u] = ggy * my;
    if (pc.dims == 3u) gg.v[g0 + 2u] = ggz * mz;
  }
#else
  for (uint ch = 0u; ch < pc.c; ++ch) {
    uint ib = in_base + ch * plane;
    R acc = 0.0;
    for (int k = 0; k < ntaps; ++k)
      if (t_off[k] >= 0) acc += inp.v[ib + uint(t_off[k])] * t_w[k];
    BufR(pc.dst).v[out_base + ch * spatial] = acc;
  }
#endif
}
