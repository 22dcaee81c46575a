#pragma once
// Convolution (1-3 spatial dims, strided, padded, dilated, grouped) and its
// gradients on contiguous [N, C, spatial...] tensors; weights [Co, Ci/groups, k...].
// A transposed convolution is conv_data_grad forward and conv_forward backward.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct ConvShape {
  int64_t n = 1, ci = 1, co = 1, groups = 1;
  int spatial = 2;             // 1, 2 or 3; the arrays below are right-aligned in (d, h, w)
  int64_t in[3] = {1, 1, 1};   // the x side ([N, Ci, in...])
  int64_t out[3] = {1, 1, 1};  // the y side ([N, Co, out...])
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
};

// y = conv(x, w) + bias (bias [Co] or 0). dtype f32, f16 or bf16 (fp32 accumulation).
void conv_forward(Device& dev, DType dtype, uint64_t x, uint64_t w, uint64_t bias, uint64_t y,
                  const ConvShape& s);
// gx = conv_transpose(gy, w) + bias (bias [Ci] or 0); gx has the `in` sizes.
void conv_data_grad(Device& dev, DType dtype, uint64_t gy, uint64_t w, uint64_t bias, uint64_t gx,
                    const ConvShape& s);
// gw[co, ci, k] = sum over n and output positions of gy * x.
void conv_weight_grad(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t gw,
                      const ConvShape& s);

}  // namespace vkml::ops
