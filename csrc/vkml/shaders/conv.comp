#version 450
// Direct N-d convolution (1-d and 2-d are 3-d with leading size-1 dims), fp32 math.
// Weights are [Co, Ci/groups, kd, kh, kw]; activations contiguous [N, C, d, h, w].
//
// Specialization constants: 0 = mode, 1 = workgroup size.
//   mode 0, forward:      p0 = x [N, Ci, I], p1 = w, p2 = bias[Co] or 0, out = y [N, Co, O]
//   mode 1, data grad:    p0 = gy [N, Co, O], p1 = w, p2 = bias[Ci] or 0, out = gx [N, Ci, I]
//                         (also the forward of a transposed convolution)
//   mode 2, weight grad:  p0 = x [N, Ci, I], p1 = gy [N, Co, O], out = gw; one workgroup
//                         per weight element reduces over N * O.
// Modes 0 and 1 are an implicit GEMM in its simplest form: one thread per output
// element gathers its input patch on the fly, nothing is materialised.
// Perf ideas (not done): tile Co x spatial per workgroup with the input patch and the
// weight slice staged in shared memory, several outputs per thread, and for weight
// grad a split-K over N * O instead of one workgroup per weight element.
//! variant f32 -DST_F32
//! variant f16 -DST_F16 -DNEED_F16
#include "common.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const uint WG = 64;

#if defined(ST_F16)
#define BUF BufF16
#define STORE(P, O, V) BUF(P).v[O] = float16_t(V)
#else
#define BUF BufF32
#define STORE(P, O, V) BUF(P).v[O] = (V)
#endif

layout(push_constant, scalar) uniform PC {
  uint64_t p0, p1, p2, dst;
  uint n, groups, ci, co;
  ivec3 isz, osz, ksz, str, pad, dil;
} pc;

float ld(uint64_t p, uint off) { return float(BUF(p).v[off]); }

shared float s_acc[WG];

void main() {
  uint ispat = uint(pc.isz.x * pc.isz.y * pc.isz.z);
  uint ospat = uint(pc.osz.x * pc.osz.y * pc.osz.z);
  uint kvol = uint(pc.ksz.x * pc.ksz.y * pc.ksz.z);
  uint cig = pc.ci / pc.groups, cog = pc.co / pc.groups;
  if (MODE == 0) {
    uint t = linear_id();
    if (t >= pc.n * pc.co * ospat) return;
    uint sp = t % ospat, rest = t / ospat;
    uint c = rest % pc.co, nn = rest / pc.co, g = c / cog;
    ivec3 o = ivec3(sp / uint(pc.osz.y * pc.osz.z), (sp / uint(pc.osz.z)) % uint(pc.osz.y),
                    sp % uint(pc.osz.z));
    ivec3 base = o * pc.str - pc.pad;
    float acc = pc.p2 != 0 ? ld(pc.p2, c) : 0.0;
    for (uint cc = 0; cc < cig; ++cc) {
      uint xb = (nn * pc.ci + g * cig + cc) * ispat;
      uint wb = (c * cig + cc) * kvol;
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
            acc += ld(pc.p0, xrow + uint(ix)) * ld(pc.p1, wrow + uint(kx));
          }
        }
      }
    }
    STORE(pc.dst, t, acc);
  } else if (MODE == 1) {
    uint t = linear_id();
    if (t >= pc.n * pc.ci * ispat) return;
    uint sp = t % ispat, rest = t / ispat;
    uint c = rest % pc.ci, nn = rest / pc.ci, g = c / cig, cl = c % cig;
    ivec3 i = ivec3(sp / uint(pc.isz.y * pc.isz.z), (sp / uint(pc.isz.z)) % uint(pc.isz.y),
                    sp % uint(pc.isz.z));
    ivec3 base = i + pc.pad;
    float acc = pc.p2 != 0 ? ld(pc.p2, c) : 0.0;
    for (uint cc = 0; cc < cog; ++cc) {
      uint oc = g * cog + cc;
      uint yb = (nn * pc.co + oc) * ospat;
      uint wb = (oc * cig + cl) * kvol;
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
            acc += ld(pc.p0, yrow + uint(tx / pc.str.z)) * ld(pc.p1, wrow + uint(kx));
          }
        }
      }
    }
    STORE(pc.dst, t, acc);
  } else {
    uint widx = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (widx >= pc.co * cig * kvol) return;  // uniform across the workgroup
    uint tid = gl_LocalInvocationID.x;
    uint kk = widx % kvol, rest = widx / kvol;
    uint cl = rest % cig, c = rest / cig, g = c / cog;
    ivec3 k = ivec3(kk / uint(pc.ksz.y * pc.ksz.z), (kk / uint(pc.ksz.z)) % uint(pc.ksz.y),
                    kk % uint(pc.ksz.z));
    ivec3 koff = k * pc.dil - pc.pad;
    float acc = 0.0;
    uint total = pc.n * ospat;
    for (uint j = tid; j < total; j += WG) {
      uint sp = j % ospat, nn = j / ospat;
      ivec3 o = ivec3(sp / uint(pc.osz.y * pc.osz.z), (sp / uint(pc.osz.z)) % uint(pc.osz.y),
                      sp % uint(pc.osz.z));
      ivec3 i = o * pc.str + koff;
      if (any(lessThan(i, ivec3(0))) || any(greaterThanEqual(i, pc.isz))) continue;
      uint xo = (nn * pc.ci + g * cig + cl) * ispat + uint((i.x * pc.isz.y + i.y) * pc.isz.z + i.z);
      acc += ld(pc.p1, (nn * pc.co + c) * ospat + sp) * ld(pc.p0, xo);
    }
    s_acc[tid] = acc;
    barrier();
    for (uint step = WG / 2; step > 0; step >>= 1) {
      if (tid < step) s_acc[tid] += s_acc[tid + step];
      barrier();
    }
    if (tid == 0) STORE(pc.dst, widx, s_acc[0]);
  }
}
