// The push constants and modes of shaders/value_check.comp, written once for its
// launcher (vkml/ops/value_check.cpp, C++) and the kernel (GLSL). The 64-bit fields
// come first, so C++'s natural alignment adds no padding that GLSL's scalar layout
// would not have.
#ifndef VKML_VALUE_CHECK_PUSH_H
#define VKML_VALUE_CHECK_PUSH_H

// Integer variants: a value below lo is noted as code_below, one above hi as
// code_above. Float variant: the mode says what a value must be, else code_below.
#define VALUE_CHECK_NONNEGATIVE_FINITE 0u  // 0 <= v < inf (NaN fails)
#define VALUE_CHECK_POSITIVE 1u            // v > 0 (NaN fails)

#include "push_block.h"

VKML_CONTRACT_BEGIN(value_check_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t data;    // contiguous values of the variant's dtype
  uint64_t errors;  // the device error record (device_error.h)
  int64_t lo, hi;
  int64_t bound;  // noted with a failure, for the message (a size)
  uint n;
  uint mode;
  uint code_below, code_above;
  uint aux;  // noted with a failure, for the message (a dim)
  uint unused;
VKML_PUSH_END(Push, 5 * 8 + 6 * 4)
VKML_CONTRACT_END(value_check_detail)

#endif
