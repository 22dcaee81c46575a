// The push constants of shaders/norm.comp, written once for its launcher
// (vkml/ops/norm.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// `part` follows the 32-bit fields at offset 112, 8-aligned in both languages.
#ifndef VKML_NORM_PUSH_H
#define VKML_NORM_PUSH_H

// Row elements a thread of modes 4 and 5 keeps in registers.
#define NORM_ROW_REGISTERS 16

// Modes (specialization constant 0), as norm.comp's header describes them. The order
// matters: both sides test ranges (per-c reductions <= NORM_BACKWARD_SUMS, the rows
// modes from NORM_ROWS_FORWARD, the split modes from NORM_PART_SUMS on), and the launcher
// sizes its pipeline slots by the last, NORM_COMBINE_BACKWARD_SUMS.
#define NORM_STATISTICS 0              // mean, rstd (and variance) per c
#define NORM_BACKWARD_SUMS 1           // sa = sum(gy w'), sb = sum(gy w' xhat) per c
#define NORM_FORWARD 2                 // y = xhat * w + b
#define NORM_DATA_GRAD 3               // gx from the statistics and sums
#define NORM_ROWS_FORWARD 4            // statistics and y, one workgroup per row
#define NORM_ROWS_DATA_GRAD 5          // sums and gx, one workgroup per row
#define NORM_PART_SUMS 6               // NORM_STATISTICS split: part sums of x
#define NORM_PART_DEVIATIONS 7         // part sums of squared deviations from the mean
#define NORM_COMBINE_STATISTICS 8      // mean, rstd and variance from the parts
#define NORM_PART_BACKWARD_SUMS 9      // NORM_BACKWARD_SUMS split: part sums
#define NORM_COMBINE_BACKWARD_SUMS 10  // sa, sb from the parts

#include "push_block.h"

VKML_CONTRACT_BEGIN(norm_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t x, gy, w, b, mean, rstd, dst, sa, sb;
  uint outer, c, inner;
  uint sdiv, smod, adiv, amod;
  float eps;    // mode 0
  float count;  // mode 3: elements per statistic
  uint parts;
  uint64_t part;  // modes 6-10: scratch, [2][c][parts] floats
VKML_PUSH_END(Push, 10 * 8 + 10 * 4)
VKML_ASSERT_OFFSET(Push, part, 9 * 8 + 10 * 4)
VKML_CONTRACT_END(norm_detail)

#endif
