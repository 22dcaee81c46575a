#pragma once
// Max and average pooling (fixed or adaptive windows, 1-3 spatial dims) over
// contiguous [planes, spatial...] tensors, and their backward passes.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct PoolShape {
  int64_t planes = 1;  // N * C
  // Right-aligned in (d, h, w); unused leading dims have size 1.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  bool adaptive = false;  // windows [floor(o*I/O), ceil((o+1)*I/O)); kernel etc. unused
  bool count_include_pad = true;
  int64_t divisor = 0;  // avg: divisor_override, 0 for none
  // avg: round the running sum and each of the three divisions by the window sizes
  // to the storage dtype, as PyTorch's CPU adaptive_avg_pool3d does for 16-bit floats.
  bool round_steps = false;
};

// dtype f32, f16 or bf16 (fp32 math); indices int64, flat within a plane, as PyTorch.
void max_pool(Device& dev, DType dtype, uint64_t x, uint64_t y, uint64_t indices,
              const PoolShape& s);
void max_pool_backward(Device& dev, DType dtype, uint64_t grad_out, uint64_t indices,
                       uint64_t grad_in, const PoolShape& s);
void avg_pool(Device& dev, DType dtype, uint64_t x, uint64_t y, const PoolShape& s);
void avg_pool_backward(Device& dev, DType dtype, uint64_t grad_out, uint64_t grad_in,
                       const PoolShape& s);

}  // namespace vkml::ops
