#pragma once
// im2col / col2im (nn.Unfold / nn.Fold): sliding 2-D windows to columns and back.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct Im2colShape {
  int64_t planes = 1;  // N * C
  int64_t H = 1, W = 1, kh = 1, kw = 1;
  int64_t ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t oh = 1, ow = 1;  // the window grid
};

// image: contiguous [planes, H, W]; columns: contiguous [planes * kh * kw, oh * ow].
// dtype f32, f16 or bf16.
void im2col(Device& dev, DType dtype, uint64_t image, uint64_t columns, const Im2colShape& s);
// image = sum of the columns over every window that covers each element.
void col2im(Device& dev, DType dtype, uint64_t columns, uint64_t image, const Im2colShape& s);

}  // namespace vkml::ops
