#pragma once
// Range checks of the indices the indexing ops (ops_index.cpp) are given: an index
// out of range raises the exception, in the words, that PyTorch's CPU kernels raise.
// Beside value_bounds.h, whose known ranges spare most device indices their check.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace vkml_aten {

// Which of the CPU's exceptions and messages an out-of-range index raises.
enum class Style {
  InSelf,     // IndexError: index out of range in self
  Bounds,     // RuntimeError: index k is out of bounds for dimension d with size n
  BoundsIdx,  // IndexError, same text
  Take,       // IndexError: out of range: tried to access index k on a tensor of n elements.
};

// The indices `index` (any dtype and device) address a dim `dim` of size `size`.
struct RangeCheck {
  at::Tensor index;
  int64_t size;
  int64_t dim;
};

// TORCH_VKML_INDEX_CHECK=0 skips the checks (and their host sync); out-of-range
// indices then read 0 / are skipped instead of raising.
bool index_checks_enabled();

// Index tensors on the CPU are checked there, at once. Device indices whose values are
// known in range (noted at upload, arange, randint, ... and unchanged since) need no
// check; the others are checked by a kernel on the device, which notes an offending
// index in the device error record: it is raised, in the CPU's words, at the next read
// of the device (item(), .cpu(), synchronize()), as CUDA raises its device-side
// asserts, and the host never waits for it. The kernels themselves read 0 for an
// index out of range and drop writes through it.
void check_ranges(const std::vector<RangeCheck>& checks, bool allow_negative, Style style);

}  // namespace vkml_aten
