#version 450
// im2col (mode 0): contiguous [N, C, H, W] -> [N, C * kh * kw, oh * ow], zero outside
// the padded image; col2im (mode 1): the adjoint, as a gather (each image element
// sums the columns that read it; no atomics, deterministic), fp32 accumulation (double
// for float64).
//! dtypes f32 f16 bf16 f64
#include "common.glsl"
#include "float_store.glsl"

layout(constant_id = 0) const int MODE = 0;

#include "im2col_push.h"

const uint WG = IM2COL_WG;
layout(local_size_x = WG) in;

void main() {
  uint t = linear_id();
  if (t >= pc.numel) return;
  if (MODE == IM2COL_IM2COL) {
    uint L = uint(pc.oh * pc.ow);
    uint l = t % L;
    uint row = t / L;  // n * C * kh * kw + c * kh * kw + ki * kw + kj
    int kj = int(row % uint(pc.kw));
    int ki = int((row / uint(pc.kw)) % uint(pc.kh));
    uint plane = row / uint(pc.kh * pc.kw);  // n * C + c
    int y = int(l) / pc.ow * pc.sh - pc.ph + ki * pc.dh;
    int x = int(l) % pc.ow * pc.sw - pc.pw + kj * pc.dw;
    bool inside = y >= 0 && y < pc.H && x >= 0 && x < pc.W;
    FT v = inside ? LD(pc.src, plane * uint(pc.H * pc.W) + uint(y * pc.W + x)) : FT(0.0);
    STORE(pc.dst, t, v);
  } else {
    int x = int(t % uint(pc.W));
    int y = int((t / uint(pc.W)) % uint(pc.H));
    uint plane = t / uint(pc.H * pc.W);
    uint L = uint(pc.oh * pc.ow);
    FT acc = FT(0.0);
    for (int ki = 0; ki < pc.kh; ++ki) {
      int yy = y + pc.ph - ki * pc.dh;
      if (yy < 0 || yy % pc.sh != 0) continue;
      int oy = yy / pc.sh;
      if (oy >= pc.oh) continue;
      for (int kj = 0; kj < pc.kw; ++kj) {
        int xx = x + pc.pw - kj * pc.dw;
        if (xx < 0 || xx % pc.sw != 0) continue;
        int ox = xx / pc.sw;
        if (ox >= pc.ow) continue;
        uint row = plane * uint(pc.kh * pc.kw) + uint(ki * pc.kw + kj);
        acc += LD(pc.src, row * L + uint(oy * pc.ow + ox));
      }
    }
    STORE(pc.dst, t, acc);
  }
}
