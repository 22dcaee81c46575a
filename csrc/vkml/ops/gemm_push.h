#pragma once
// The push constants and flags shared by shaders/gemm.comp and
// shaders/gemm_coopmat.comp (the launchers in matmul.cpp and gemm_coopmat.cpp).
#include <cstdint>

namespace vkml::ops::gemm_detail {

constexpr uint32_t kBias = 1, kAMFast = 2, kBKFast = 4, kSplit = 8, kSplitSum = 16;
// gemm_coopmat.comp only: A's or B's fast side has stride 1 and 8-byte aligned quads.
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

}  // namespace vkml::ops::gemm_detail
