#version 450
// Direct N-d convolution (1-d and 2-d are 3-d with leading size-1 dims), fp32 math.
// Weights are [Co, Ci/groups, kd, kh, kw]; activations contiguous [N, C, d, h, w].
//
// Specialization constants: 0 = mode, 1 = workgroup size, 2 = channels per thread.
//   mode 0, forward:      p0 = x [N, Ci, I], p1 = w, p2 = bias[Co] or 0, out = y [N, Co, O]
//   mode 1, data grad:    p0 = gy [N, Co, O], p1 = w, p2 = bias[Ci] or 0, out = gx [N, Ci, I]
//                         (also the forward of a transposed convolution)
//   mode 2, weight grad:  p0 = x [N, Ci, I], p1 = gy [N, Co, O], out = gw; one workgroup
//                         per weight element reduces over N * O.
// Modes 0 and 1 are an implicit GEMM without shared-memory tiling: each thread computes
// TILE channels (of one group) at one position, gathering its input patch on the fly
// (nothing is materialised) and reusing each gathered value TILE times. Mode 2 gives
// each workgroup TILE input channels of one (output channel, kernel position).
// Perf ideas (not done): stage the input patch and the weight slice in shared memory
// and tile spatial positions too; split-K over N * O for the weight grad.
//! dtypes f32 f16 bf16
#include "common.glsl"
#include "float_store.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 64;
layout(constant_id = 2) const uint TILE = 8;

#include "conv_push.h"

float ld(uint64_t p, uint off) { return LD(p, off); }

shared float s_acc[TILE * WG];

void main() {
  uint ispat = uint(pc.isz.x * pc.isz.y * pc.isz.z);
  uint ospat = uint(pc.osz.x * pc.osz.y * pc.osz.z);
  uint kvol = uint(pc.ksz.x * pc.ksz.y * pc.ksz.z);
  uint cig = pc.ci / pc.groups, cog = pc.co / pc.groups;
  float acc[TILE];
  if (MODE == CONV_FORWARD) {
    uint tiles = (cog + TILE - 1) / TILE;  // channel tiles per group
    uint t = linear_id();
    if (t >= pc.n * pc.groups * tiles * ospat) return;
    uint sp = t % ospat, rest = t / ospat;
    uint tb = rest % (pc.groups * tiles), nn = rest / (pc.groups * tiles);
    uint g = tb / tiles, first = (tb % tiles) * TILE;
    uint cnt = min(TILE, cog - first), c0 = g * cog + first;
    ivec3 o = ivec3(sp / uint(pc.osz.y * pc.osz.z), (sp / uint(pc.osz.z)) % uint(pc.osz.y),
                    sp % uint(pc.osz.z));
    ivec3 base = o * pc.str - pc.pad;
    for (uint j = 0; j < TILE; ++j) acc[j] = (pc.p2 != 0 && j < cnt) ? ld(pc.p2, c0 + j) : 0.0;
    uint wstride = cig * kvol;  // between consecutive output channels
    for (uint cc = 0; cc < cig; ++cc) {
      uint xb = (nn * pc.ci + g * cig + cc) * ispat;
      uint wb = (c0 * cig + cc) * kvol;
      for (int kz = 0; kz < pc.ksz.x; ++kz) {
        int iz = base.x + kz * pc.dil.x;
        if (iz < 0 || iz >= pc.isz.x) continue;
        for (int ky = 0; ky < pc.ksz.y; ++ky) {
          int iy = base.y + ky * pc.dil.y;
          if (iy < 0 || iy >= pc.isz.y) continue;
          uint xrow = xb + uint(iz * pc.isz.y + iy) * uint(pc.isz.z);
          uint wrow = wb + uint(kz * pc.ksz.y + ky) * uint(pc.ksz.z);
          for (int kx = 0; kx < pc.ksz.z; ++kx) {
            int ix = base.z + kx * pc.dil.z;
            if (ix < 0 || ix >= pc.isz.z) continue;
            float xv = ld(pc.p0, xrow + uint(ix));
            for (uint j = 0; j < TILE; ++j)
              if (j < cnt) acc[j] += xv * ld(pc.p1, wrow + uint(kx) + j * wstride);
          }
        }
      }
    }
    uint ob = (nn * pc.co + c0) * ospat + sp;
    for (uint j = 0; j < TILE; ++j)
      if (j < cnt) STORE(pc.dst, ob + j * ospat, acc[j]);
  } else if (MODE == CONV_DATA_GRAD) {
    uint tiles = (cig + TILE - 1) / TILE;
    uint t = linear_id();
    if (t >= pc.n * pc.groups * tiles * ispat) return;
    uint sp = t % ispat, rest = t / ispat;
    uint tb = rest % (pc.groups * tiles), nn = rest / (pc.groups * tiles);
    uint g = tb / tiles, first = (tb % tiles) * TILE;
    uint cnt = min(TILE, cig - first), c0 = g * cig + first;
    ivec3 i = ivec3(sp / uint(pc.isz.y * pc.isz.z), (sp / uint(pc.isz.z)) % uint(pc.isz.y),
                    sp % uint(pc.isz.z));
    ivec3 base = i + pc.pad;
    for (uint j = 0; j < TILE; ++j) acc[j] = (pc.p2 != 0 && j < cnt) ? ld(pc.p2, c0 + j) : 0.0;
    for (uint cc = 0; cc < cog; ++cc) {
      uint oc = g * cog + cc;
      uint yb = (nn * pc.co + oc) * ospat;
      uint wb = (oc * cig + first) * kvol;  // consecutive input channels are kvol apart
      for (int kz = 0; kz < pc.ksz.x; ++kz) {
        int tz = base.x - kz * pc.dil.x;
        if (tz < 0 || tz % pc.str.x != 0 || tz / pc.str.x >= pc.osz.x) continue;
        for (int ky = 0; ky < pc.ksz.y; ++ky) {
          int ty = base.y - ky * pc.dil.y;
          if (ty < 0 || ty % pc.str.y != 0 || ty / pc.str.y >= pc.osz.y) continue;
          uint yrow = yb + uint((tz / pc.str.x) * pc.osz.y + ty / pc.str.y) * uint(pc.osz.z);
          uint wrow = wb + uint(kz * pc.ksz.y + ky) * uint(pc.ksz.z);
          for (int kx = 0; kx < pc.ksz.z; ++kx) {
            int tx = base.z - kx * pc.dil.z;
            if (tx < 0 || tx % pc.str.z != 0 || tx / pc.str.z >= pc.osz.z) continue;
            float gv = ld(pc.p0, yrow + uint(tx / pc.str.z));
            for (uint j = 0; j < TILE; ++j)
              if (j < cnt) acc[j] += gv * ld(pc.p1, wrow + uint(kx) + j * kvol);
          }
        }
      }
    }
    uint ob = (nn * pc.ci + c0) * ispat + sp;
    for (uint j = 0; j < TILE; ++j)
      if (j < cnt) STORE(pc.dst, ob + j * ispat, acc[j]);
  } else {  // CONV_WEIGHT_GRAD
    // Workgroup = (output channel c, input-channel tile, kernel position).
    uint tiles = (cig + TILE - 1) / TILE;
    uint widx = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (widx >= pc.co * tiles * kvol) return;  // uniform across the workgroup
    uint tid = gl_LocalInvocationID.x;
    uint kk = widx % kvol, rest = widx / kvol;
    uint first = (rest % tiles) * TILE, c = rest / tiles, g = c / cog;
    uint cnt = min(TILE, cig - first);
    ivec3 k = ivec3(kk / uint(pc.ksz.y * pc.ksz.z), (kk / uint(pc.ksz.z)) % uint(pc.ksz.y),
                    kk % uint(pc.ksz.z));
    ivec3 koff = k * pc.dil - pc.pad;
    for (uint j = 0; j < TILE; ++j) acc[j] = 0.0;
    uint total = pc.n * ospat;
    for (uint q = tid; q < total; q += WG) {
      uint sp = q % ospat, nn = q / ospat;
      ivec3 o = ivec3(sp / uint(pc.osz.y * pc.osz.z), (sp / uint(pc.osz.z)) % uint(pc.osz.y),
                      sp % uint(pc.osz.z));
      ivec3 i = o * pc.str + koff;
      if (any(lessThan(i, ivec3(0))) || any(greaterThanEqual(i, pc.isz))) continue;
      float gv = ld(pc.p1, (nn * pc.co + c) * ospat + sp);
      uint xo = (nn * pc.ci + g * cig + first) * ispat +
                uint((i.x * pc.isz.y + i.y) * pc.isz.z + i.z);
      for (uint j = 0; j < TILE; ++j)
        if (j < cnt) acc[j] += gv * ld(pc.p0, xo + j * ispat);
    }
    for (uint j = 0; j < TILE; ++j) s_acc[j * WG + tid] = acc[j];
    barrier();
    for (uint step = WG / 2; step > 0; step >>= 1) {
      if (tid < step)
        for (uint j = 0; j < TILE; ++j) s_acc[j * WG + tid] += s_acc[j * WG + tid + step];
      barrier();
    }
    if (tid < cnt) STORE(pc.dst, (c * cig + first + tid) * kvol + kk, s_acc[tid * WG]);
  }
}
