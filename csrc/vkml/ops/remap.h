#pragma once
// Gathers whose source index is a per-dim function of the output index: flip,
// roll, padding (constant zero, reflect, replicate, circular), nearest-neighbour
// resampling, repeat_interleave by a constant; and the float32 adjoint
// (scatter-add) that their backward passes need.
#include <cstdint>
#include <vector>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/remap_push.h"

namespace vkml::ops {

struct RemapDim {
  int64_t out_size = 1;
  int64_t in_size = 1;
  int64_t in_stride = 1;  // elements; forward: of the input, backward: of grad_in
  int mode = REMAP_IDENTITY;
  int64_t param = 0;   // pad before (padding modes), shift (roll), divisor (div)
  float scale = 1.0f;  // nearest modes: input index = floor(i * scale) (+0.5 for exact)
};

// Input index of output index i along one dim; -1 = outside the input (zero).
int64_t remap_index(const RemapDim& d, int64_t i);

// dst (contiguous, sizes = out_size of each dim, outermost first) = gathered src.
// Any dtype: elements move by size.
void remap(Device& dev, DType dtype, uint64_t dst, uint64_t src, std::vector<RemapDim> dims);

// grad_in[m(i)] += grad_out[i], both float32; grad_in must be zeroed, and the
// in_stride of each dim must describe grad_in. grad_out is contiguous.
void remap_backward(Device& dev, uint64_t grad_in, uint64_t grad_out, std::vector<RemapDim> dims);

}  // namespace vkml::ops
