#pragma once
// Spatial sampling at grid points (torch.nn.functional.grid_sample), 2-d and 3-d,
// and its backward pass; float32, and float64 where the device has it.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/grid_sample_push.h"

namespace vkml::ops {

enum class GridInterp {  // PyTorch's codes
  Bilinear = GRID_SAMPLE_BILINEAR,
  Nearest = GRID_SAMPLE_NEAREST,
  Bicubic = GRID_SAMPLE_BICUBIC
};
enum class GridPadding {
  Zeros = GRID_SAMPLE_ZEROS,
  Border = GRID_SAMPLE_BORDER,
  Reflection = GRID_SAMPLE_REFLECTION
};

struct GridSampleShape {
  int dims = 2;  // 2: id == od == 1 and grid points are (x, y); 3: (x, y, z)
  int64_t n = 1, c = 1, id = 1, ih = 1, iw = 1, od = 1, oh = 1, ow = 1;
  GridInterp mode = GridInterp::Bilinear;
  GridPadding padding = GridPadding::Zeros;
  bool align_corners = false;
  DType dtype = DType::f32;  // of input, grid, output and gradients: f32 or f64
};

// input [n, c, id, ih, iw], grid [n, od, oh, ow, dims], out [n, c, od, oh, ow]:
// contiguous, of s.dtype. Bicubic is 2-d only. float64 needs supports_fp64, and its
// input gradient supports_int64_atomics (grid_sample_supports says which).
void grid_sample(Device& dev, uint64_t input, uint64_t grid, uint64_t out,
                 const GridSampleShape& s);
// grad_input (zeroed, or 0 when not wanted) += the input gradient; grad_grid (or
// 0) is fully written.
void grid_sample_backward(Device& dev, uint64_t grad_out, uint64_t input, uint64_t grid,
                          uint64_t grad_input, uint64_t grad_grid, const GridSampleShape& s);
// Whether the device has a kernel for dtype (the backward's input gradient included
// when `input_gradient`).
bool grid_sample_supports(const Device& dev, DType dtype, bool input_gradient);

}  // namespace vkml::ops
