#pragma once
// How wide a product's operand loads may be in the GEMM kernels (gemm.comp's quad
// flags, gemm_coopmat.comp's load widths); shared by matmul.cpp and gemm_coopmat.cpp.
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "vkml/ops/matmul.h"
#include "vkml/shaders/gemm_push.h"

namespace vkml::ops::gemm_detail {

// How many elements of an operand the GEMM kernels may load at once along its
// contiguous side (k or m for A, k or n for B, the side the kernels stage by): w of
// `widths` (largest first) where that side has stride 1, the other strides are
// multiples of w and the start is aligned to w elements; 1 where none fits, and 1 where
// that side is a grouped product's grouped one (a group's range starts anywhere).
inline int64_t vector_width(const GemmArgs& g, bool a, size_t itemsize,
                            std::initializer_list<int64_t> widths) {
  const uint64_t address = a ? g.a : g.b;
  const int64_t batch_stride = a ? g.a_batch : g.b_batch;
  const int64_t row = a ? g.a_row : g.b_row, col = a ? g.a_col : g.b_col;
  // A contiguous along m, or B along k, is staged by that side (rows of stride 1)
  const bool row_fast = row == 1 && col != 1;
  const int64_t other = row_fast ? col : row;
  if (!row_fast && col != 1) return 1;
  const GemmGroups staged =
      a ? (row_fast ? GemmGroups::m : GemmGroups::k) : (row_fast ? GemmGroups::k : GemmGroups::n);
  if (g.groups == staged) return 1;
  for (int64_t w : widths)
    if (other >= 0 && other % w == 0 && address % (uint64_t(w) * itemsize) == 0 &&
        (g.batch == 1 || batch_stride % w == 0))
      return w;
  return 1;
}

// GEMM_A_VEC / GEMM_B_VEC (gemm.comp's four-element loads) for the operands that allow
// them.
inline uint32_t quad_flags(const GemmArgs& g, size_t itemsize) {
  return (vector_width(g, true, itemsize, {4}) == 4 ? GEMM_A_VEC : 0) |
         (vector_width(g, false, itemsize, {4}) == 4 ? GEMM_B_VEC : 0);
}

}  // namespace vkml::ops::gemm_detail
