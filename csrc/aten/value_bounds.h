#pragma once
// The adapter's side of vkml::ValueBounds: noting the ranges that uploads,
// arange and randint give integer tensors, and asking for them where an index
// bounds check would otherwise read the index back.
#include <ATen/ATen.h>

#include <optional>

#include "vkml/runtime/value_bounds.h"

namespace vkml_aten {

// `t` (vkml) now holds values in [lo, hi]. Noted for contiguous int64/int32
// tensors only: the bytes between a strided view's elements hold other values.
void note_values(const at::Tensor& t, int64_t lo, int64_t hi);
// `dst` (vkml) now holds a copy of `src` (CPU, same dtype).
void note_uploaded(const at::Tensor& dst, const at::Tensor& src);
// The range of the values of `t` (vkml, any view), if still known.
std::optional<vkml::IntRange> known_values(const at::Tensor& t);

}  // namespace vkml_aten
