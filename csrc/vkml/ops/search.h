#pragma once
// searchsorted / bucketize (binary search) and histc / bincount (atomic counting).
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// For each value: the number of boundaries < value (right: <= value) in its row.
// boundaries: contiguous [rows, m]; values: contiguous, per_row values per row
// (rows == 1: all values). Keys are f32 or i64 (both operands). sorter: 0 or int64
// [rows, m]. dst: int64, or int32 when out_i32.
void searchsorted(Device& dev, DType key_dtype, uint64_t boundaries, uint64_t values,
                  uint64_t sorter, uint64_t dst, int64_t m, int64_t per_row, int64_t numel,
                  bool right, bool out_i32);

// bins (int32 [nbins], zeroed) += counts of float32 values in [lo, hi] (histc rules).
void histc(Device& dev, uint64_t src, int64_t numel, uint64_t bins, int64_t nbins, float lo,
           float hi);

// bins[v] += 1 (int32 bins) or += weight (float32 bins, when weights != 0) for int64
// values v in [0, nbins); bins zeroed.
void bincount(Device& dev, uint64_t src, uint64_t weights, int64_t numel, uint64_t bins,
              int64_t nbins);

}  // namespace vkml::ops
