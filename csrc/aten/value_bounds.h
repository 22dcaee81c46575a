#pragma once
// The adapter's side of vkml::ValueBounds: noting the ranges that uploads,
// creation ops and gathers give integer tensors, and asking for them where an
// index bounds check would otherwise read the index back.
#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "vkml/runtime/value_bounds.h"

namespace vkml_aten {

// `t` (vkml) now holds values in [lo, hi]. Noted for contiguous int64/int32
// tensors only: the bytes between a strided view's elements hold other values.
void note_values(const at::Tensor& t, int64_t lo, int64_t hi);
// `dst` (vkml) now holds a copy of `src` (CPU, same dtype).
void note_uploaded(const at::Tensor& dst, const at::Tensor& src);
// The range of the values of `t` (vkml, any view), if still known.
std::optional<vkml::IntRange> known_values(const at::Tensor& t);
// `out` (vkml) now holds values gathered from `src`: src's range, widened to 0
// when the indices were not checked (out-of-range reads give 0).
void note_gathered(const at::Tensor& out, const at::Tensor& src, bool checked);
// `out` (vkml) now holds the values of `inputs` (cat): their ranges joined.
void note_joined(const at::Tensor& out, const std::vector<at::Tensor>& inputs);

}  // namespace vkml_aten
