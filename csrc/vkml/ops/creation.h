#pragma once
// Value-filled creation kernels beyond arange (which is an elementwise op).
#include <cstdint>

#include "vkml/runtime/device.h"

namespace vkml::ops {

// dst[i] (contiguous float32, or float64 where the device has shaderFloat64) =
// start + step * i for i < n / 2, end - step * (n - 1 - i) otherwise, each one
// fused multiply-add. start, end and step are given in the output precision.
void linspace(Device& dev, uint64_t dst, bool f64, int64_t n, double start, double end,
              double step);

}  // namespace vkml::ops
