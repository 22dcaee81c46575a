#pragma once
// The push constants and flags shared by shaders/gemm.comp and
// shaders/gemm_coopmat.comp (the launchers in matmul.cpp and gemm_coopmat.cpp).
#include <cstddef>
#include <cstdint>

#include "vkml/ops/matmul.h"

namespace vkml::ops::gemm_detail {

constexpr uint32_t kBias = 1, kAMFast = 2, kBKFast = 4, kSplit = 8, kSplitSum = 16;
// Float kernels: A's or B's fast side has stride 1 and its quads are aligned.
constexpr uint32_t kAVec = 32, kBVec = 64;

struct Push {
  uint64_t a, b, c, bias;
  int64_t a_batch, b_batch, c_batch, bias_batch;
  int32_t a_row, a_col, b_row, b_col, c_row, c_col, bias_row, bias_col;
  uint32_t m, n, k, batch;
  float alpha, beta;
  uint32_t flags;
  uint32_t splits;
};
static_assert(sizeof(Push) <= 128);

// kAVec / kBVec for the operands whose elements along their contiguous side (k or m
// for A, k or n for B, the side the kernels stage by) have stride 1, whose other
// strides are multiples of 4 and whose start is aligned to 4 elements: the kernels
// then move four elements with one load.
inline uint32_t quad_flags(const GemmArgs& g, size_t itemsize) {
  auto quads = [&](uint64_t address, int64_t batch_stride, int64_t row, int64_t col,
                   bool row_fast) {
    const int64_t other = row_fast ? col : row;
    return (row_fast || col == 1) && other >= 0 && other % 4 == 0 &&
           address % (4 * itemsize) == 0 && (g.batch == 1 || batch_stride % 4 == 0);
  };
  const bool a_mfast = g.a_row == 1 && g.a_col != 1, b_kfast = g.b_row == 1 && g.b_col != 1;
  return (quads(g.a, g.a_batch, g.a_row, g.a_col, a_mfast) ? kAVec : 0) |
         (quads(g.b, g.b_batch, g.b_row, g.b_col, b_kfast) ? kBVec : 0);
}

}  // namespace vkml::ops::gemm_detail
