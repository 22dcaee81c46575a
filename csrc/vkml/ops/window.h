#pragma once
// The geometry of a sliding window over up to three spatial dims, shared by the
// convolution and pooling launchers: their shapes hold in/out/kernel/stride/pad/
// dilation per dim, right-aligned into (d, h, w) with missing leading dims of size 1,
// and their push constants take the same six ivec3s (isz, osz, ksz, str, pad, dil).
#include <cstdint>

namespace vkml::ops {

template <class Push, class Shape>
void fill_window(Push& p, const Shape& s) {
  for (int d = 0; d < 3; ++d) {
    p.isz[d] = int32_t(s.in[d]);
    p.osz[d] = int32_t(s.out[d]);
    p.ksz[d] = int32_t(s.kernel[d]);
    p.str[d] = int32_t(s.stride[d]);
    p.pad[d] = int32_t(s.pad[d]);
    p.dil[d] = int32_t(s.dilation[d]);
  }
}

}  // namespace vkml::ops
