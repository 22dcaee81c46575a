#version 450
// Max / average pooling (fixed or adaptive windows) over contiguous [planes, d, h, w]
// tensors (1-d and 2-d pooling have leading size-1 dims), and their backward passes;
// fp32 math (float64 in double).
//
// Specialization constants: 0 = mode, 1 = adaptive windows, 2 = workgroup size.
//   mode 0, max forward:     x -> y, idx (int64 flat index within the input plane)
//   mode 1, avg forward:     x -> y
//   mode 2, max backward:    x = grad_out, idx -> y = grad_in
//   mode 3, avg backward:    x = grad_out -> y = grad_in
// Backward runs one thread per input element and gathers from the outputs whose
// window covers it (no atomics, deterministic).
//! dtypes f32 f16 bf16 f64
#include "common.glsl"
#include "float_store.glsl"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const bool ADAPTIVE = false;
layout(constant_id = 2) const uint WG = 64;

#include "pool_push.h"

FT ld(uint64_t p, uint off) { return LD(p, off); }
#define NEG_INF FT(uintBitsToFloat(0xff800000u))

// The input range [lo, hi) of output o along dim a; for average pooling also the
// padded window size along a (for count_include_pad).
void window(int a, int o, out int lo, out int hi, out int padded) {
  int isz = pc.isz[a], osz = pc.osz[a];
  if (ADAPTIVE) {
    lo = (o * isz) / osz;
    hi = ((o + 1) * isz + osz - 1) / osz;
    padded = hi - lo;
  } else if (MODE == POOL_MAX_FORWARD || MODE == POOL_MAX_BACKWARD) {
    lo = o * pc.str[a] - pc.pad[a];
    hi = min(lo + (pc.ksz[a] - 1) * pc.dil[a] + 1, isz);
    while (lo < 0) lo += pc.dil[a];
    padded = 0;
  } else {
    lo = o * pc.str[a] - pc.pad[a];
    hi = min(lo + pc.ksz[a], isz + pc.pad[a]);
    padded = hi - lo;
    lo = max(lo, 0);
    hi = min(hi, isz);
  }
}

// The outputs [lo, hi) along dim a whose window may cover input i.
void covering(int a, int i, out int lo, out int hi) {
  int isz = pc.isz[a], osz = pc.osz[a];
  if (ADAPTIVE) {
    lo = (i * osz) / isz;
    hi = min(((i + 1) * osz + isz - 1) / isz, osz);
  } else {
    int span = (MODE == POOL_MAX_BACKWARD ? (pc.ksz[a] - 1) * pc.dil[a] : pc.ksz[a] - 1);
    int num = i + pc.pad[a] - span;
    lo = num <= 0 ? 0 : (num + pc.str[a] - 1) / pc.str[a];
    hi = min((i + pc.pad[a]) / pc.str[a] + 1, osz);
  }
}

FT avg_divisor(int lz, int hz, int pz, int ly, int hy, int py, int lx, int hx, int px) {
  if (pc.divisor != 0) return FT(pc.divisor);
  if (pc.count_include_pad != 0 || ADAPTIVE) return FT(pz * py * px);
  return FT((hz - lz) * (hy - ly) * (hx - lx));
}

void main() {
  uint t = linear_id();
  int ospat = pc.osz.x * pc.osz.y * pc.osz.z, ispat = pc.isz.x * pc.isz.y * pc.isz.z;
  bool fwd = MODE < POOL_MAX_BACKWARD;
  int spat = fwd ? ospat : ispat;
  if (t >= pc.planes * uint(spat)) return;
  uint plane = t / uint(spat);
  int sp = int(t % uint(spat));
  ivec3 sz = fwd ? pc.osz : pc.isz;
  ivec3 c = ivec3(sp / (sz.y * sz.z), (sp / sz.z) % sz.y, sp % sz.z);
  if (fwd) {
    int lz, hz, pz, ly, hy, py, lx, hx, px;
    window(0, c.x, lz, hz, pz);
    window(1, c.y, ly, hy, py);
    window(2, c.z, lx, hx, px);
    uint ib = plane * uint(ispat);
    if (MODE == POOL_MAX_FORWARD) {
      int dz = ADAPTIVE ? 1 : pc.dil.x, dy = ADAPTIVE ? 1 : pc.dil.y;
      int dx = ADAPTIVE ? 1 : pc.dil.z;
      FT m = NEG_INF;
      int mi = (lz * pc.isz.y + ly) * pc.isz.z + lx;
      for (int z = lz; z < hz; z += dz)
        for (int y = ly; y < hy; y += dy)
          for (int x = lx; x < hx; x += dx) {
            int i = (z * pc.isz.y + y) * pc.isz.z + x;
            FT v = ld(pc.x, ib + uint(i));
            if (v > m || isnan(v)) {
              m = v;
              mi = i;
            }
          }
      STORE(pc.y, t, m);
      BufI64(pc.idx).v[t] = int64_t(mi);
    } else {
      FT acc = FT(0);
      for (int z = lz; z < hz; ++z)
        for (int y = ly; y < hy; ++y)
          for (int x = lx; x < hx; ++x) {
            acc += ld(pc.x, ib + uint((z * pc.isz.y + y) * pc.isz.z + x));
            if (pc.round_steps != 0) acc = round_to_storage(acc);
          }
      bool empty = lz >= hz || ly >= hy || lx >= hx;
      FT r = pc.round_steps != 0
                    ? round_to_storage(round_to_storage(acc / FT(pz)) / FT(py)) / FT(px)
                    : acc / avg_divisor(lz, hz, pz, ly, hy, py, lx, hx, px);
      STORE(pc.y, t, empty ? FT(0) : r);
    }
  } else {
    int oz0, oz1, oy0, oy1, ox0, ox1;
    covering(0, c.x, oz0, oz1);
    covering(1, c.y, oy0, oy1);
    covering(2, c.z, ox0, ox1);
    uint ob = plane * uint(ospat);
    FT acc = FT(0);
    for (int z = oz0; z < oz1; ++z)
      for (int y = oy0; y < oy1; ++y)
        for (int x = ox0; x < ox1; ++x) {
          uint o = ob + uint((z * pc.osz.y + y) * pc.osz.z + x);
          if (MODE == POOL_MAX_BACKWARD) {
            if (BufI64(pc.idx).v[o] == int64_t(sp)) acc += ld(pc.x, o);
          } else {
            int lz, hz, pz, ly, hy, py, lx, hx, px;
            window(0, z, lz, hz, pz);
            window(1, y, ly, hy, py);
            window(2, x, lx, hx, px);
            if (c.x < lz || c.x >= hz || c.y < ly || c.y >= hy || c.z < lx || c.z >= hx) continue;
            acc += ld(pc.x, o) / avg_divisor(lz, hz, pz, ly, hy, py, lx, hx, px);
          }
        }
    STORE(pc.y, t, acc);
  }
}
