#pragma once
// Normalisation kernels shared by batch, layer and group norm. Activations have the
// storage dtype (f32, f16 or bf16); statistics, weights, biases and sums are f32.
//
// A tensor is seen as contiguous [outer, c, inner]; element e uses the statistic
// (mean, rstd) at (e / sdiv) % smod and the affine parameter at (e / adiv) % amod.
#include <cstdint>

#include "vkml/core/dtype.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

struct NormView {
  int64_t outer = 1, c = 1, inner = 1;
  int64_t sdiv = 1, smod = 1, adiv = 1, amod = 1;
};

// Per c over (outer, inner): mean, rstd = 1/sqrt(var + eps), and the biased variance
// into var if var != 0.
void norm_stats(Device& dev, DType dtype, uint64_t x, uint64_t mean, uint64_t rstd, uint64_t var,
                const NormView& v, float eps);
// y = (x - mean) * rstd * w + b; w and b may be 0.
void norm_forward(Device& dev, DType dtype, uint64_t x, uint64_t w, uint64_t b, uint64_t mean,
                  uint64_t rstd, uint64_t y, const NormView& v);
// Per c over (outer, inner): sa = sum(gy * w), sb = sum(gy * w * xhat); w may be 0 (= 1).
void norm_backward_sums(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w,
                        uint64_t mean, uint64_t rstd, uint64_t sa, uint64_t sb, const NormView& v);
// gx = rstd * (gy * w - (sa + xhat * sb) / count), sa and sb indexed like the statistics;
// with sa == 0 the statistics are constants: gx = rstd * gy * w.
void norm_data_grad(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w, uint64_t mean,
                    uint64_t rstd, uint64_t sa, uint64_t sb, uint64_t gx, const NormView& v,
                    int64_t count);

// Rows: outer == 1 and each statistic c a row of `inner` contiguous elements (layer and
// group norm). The statistics and y in one pass over x, one workgroup per row, as
// norm_stats + norm_forward compute them.
void norm_rows_forward(Device& dev, DType dtype, uint64_t x, uint64_t w, uint64_t b, uint64_t mean,
                       uint64_t rstd, uint64_t y, const NormView& v, float eps);
// gx of rows in one pass, as norm_backward_sums + norm_data_grad (count = inner).
void norm_rows_data_grad(Device& dev, DType dtype, uint64_t x, uint64_t gy, uint64_t w,
                         uint64_t mean, uint64_t rstd, uint64_t gx, const NormView& v);

}  // namespace vkml::ops
