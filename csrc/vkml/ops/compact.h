#pragma once
// Stream compaction over an inclusive int32 prefix sum of 0/1 flags
// (see shaders/compact.comp): nonzero, masked_select, masked_scatter.
#include <cstdint>
#include <vector>

#include "vkml/runtime/device.h"
#include "vkml/shaders/compact_push.h"

namespace vkml::ops {

enum class CompactMode {
  Coordinates = COMPACT_COORDINATES,
  Select = COMPACT_SELECT,
  Scatter = COMPACT_SCATTER
};

struct CompactArgs {
  CompactMode mode = CompactMode::Select;
  uint64_t prefix = 0;  // int32 [n], inclusive prefix sum of the flags
  uint64_t src = 0, dst = 0;
  int64_t n = 0;
  int64_t elem_size = 4;       // bytes per element (Select, Scatter): 1, 2, 4 or 8
  std::vector<int64_t> sizes;  // Coordinates: the flagged tensor's shape (<= 12 dims)
  int64_t limit = 0;           // Scatter: elements in src; Coordinates: rows of dst
};

void compact(Device& dev, const CompactArgs& args);

}  // namespace vkml::ops
