#pragma once
// The range of an integer elementwise op's results from the ranges of its
// inputs, so that indices computed on the device (positions plus an offset, a
// clamp, a remainder) keep a known range (runtime/value_bounds.h) and need no
// read-back to be checked.
#include <cstdint>
#include <optional>

#include "vkml/runtime/value_bounds.h"

namespace vkml::ops {

struct RangeArgs {
  int op = 0;                       // shaders/op_codes.h
  int bits = 64;                    // the compute dtype's: 32 or 64 (the kernels wrap)
  std::optional<IntRange> in[3];    // each input's values; nullopt: unknown
  int64_t alpha = 1;                // add / sub: b's factor
  std::optional<int64_t> min, max;  // OP_CLAMP's scalar bounds
};

// The range of the results, computed without wrapping; nullopt for ops not
// handled here, and where the range reaches an end of the dtype's (an unknown
// input's values, or a result that may have wrapped).
std::optional<IntRange> elementwise_range(const RangeArgs& a);

}  // namespace vkml::ops
