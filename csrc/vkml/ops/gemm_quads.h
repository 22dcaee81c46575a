#pragma once
// Which of the GEMM kernels' quad flags (shaders/gemm_push.h) a product may use;
// shared by the launchers in matmul.cpp and gemm_coopmat.cpp.
#include <cstddef>
#include <cstdint>

#include "vkml/ops/matmul.h"
#include "vkml/shaders/gemm_push.h"

namespace vkml::ops::gemm_detail {

// GEMM_A_VEC / GEMM_B_VEC for the operands whose elements along their contiguous side
// (k or m for A, k or n for B, the side the kernels stage by) have stride 1, whose
// other strides are multiples of 4 and whose start is aligned to 4 elements: the
// kernels then move four elements with one load.
inline uint32_t quad_flags(const GemmArgs& g, size_t itemsize) {
  auto quads = [&](uint64_t address, int64_t batch_stride, int64_t row, int64_t col,
                   bool row_fast) {
    const int64_t other = row_fast ? col : row;
    return (row_fast || col == 1) && other >= 0 && other % 4 == 0 &&
           address % (4 * itemsize) == 0 && (g.batch == 1 || batch_stride % 4 == 0);
  };
  const bool a_mfast = g.a_row == 1 && g.a_col != 1, b_kfast = g.b_row == 1 && g.b_col != 1;
  return (quads(g.a, g.a_batch, g.a_row, g.a_col, a_mfast) ? GEMM_A_VEC : 0) |
         (quads(g.b, g.b_batch, g.b_row, g.b_col, b_kfast) ? GEMM_B_VEC : 0);
}

}  // namespace vkml::ops::gemm_detail
