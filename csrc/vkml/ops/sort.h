#pragma once
// Sorting rows: a stable bitonic sort of (key, index) pairs, any row length.
// Keys are float32 (NaN sorts as the largest value, as in PyTorch) or int64;
// callers convert other dtypes (exactly) to one of these.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// in: contiguous [rows, n] keys of `key_dtype` (f32 or i64); out_keys the same,
// sorted along each row; out_idx: int64 [rows, n], the source position of each
// output. Ties keep their input order (also when descending).
void sort_rows(Device& dev, DType key_dtype, uint64_t in, uint64_t out_keys, uint64_t out_idx,
               int64_t rows, int64_t n, bool descending);

}  // namespace vkml::ops

namespace vkml::ops {

// Groups of equal keys in sorted keys [n] (from sort_rows; perm = its indices).
// unique_groups writes ids (uint32 [n] scratch: 1-based group of each position)
// and returns nothing; the caller reads ids[n - 1] (the group count) and calls
// unique_write, which fills uniq ([count] keys), start (int64 [count]), and
// optionally inverse (int64 [n], by source position) and counts (int64 [count]).
void unique_groups(Device& dev, DType key_dtype, uint64_t keys, uint64_t ids, int64_t n);
void unique_write(Device& dev, DType key_dtype, uint64_t keys, uint64_t perm, uint64_t ids,
                  int64_t n, int64_t count, uint64_t uniq, uint64_t start, uint64_t inverse,
                  uint64_t counts);

}  // namespace vkml::ops
