// The push constants and table record of shaders/elementwise.comp, written once for
// its launchers (vkml/ops/elementwise.cpp and elementwise_batch.cpp, C++) and the
// kernel (GLSL), which reads the bytes as laid out here. The flags are the EW_* of
// op_codes.h. The 64-bit fields come first or fall on 8-byte offsets, so C++ adds no
// padding between fields.
#ifndef VKML_ELEMENTWISE_PUSH_H
#define VKML_ELEMENTWISE_PUSH_H

// Threads per workgroup; a thread of the *_table variants takes four elements.
#define ELEMENTWISE_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(elementwise_detail)

// One contiguous tensor set of a multi-tensor op (vkml/ops/elementwise_batch.h), in
// the table the *_table variants read at ptr[0].
struct TableRecord {
  uint64_t ptr[4];
  uint64_t s[3];
  uint first_group;
  uint numel;
  uint splat;     // bit k: input k is one element, read for every output
  uint aligned4;  // the non-splat operands are 4-element aligned
};

VKML_ASSERT_SIZE(TableRecord, 7 * 8 + 4 * 4)
VKML_PUSH_BEGIN(Push)
  uint64_t ptr[4];  // out, in0, in1, in2
  int size[3];      // innermost first
  int ndim;
  int stride[4][3];  // element strides per operand
  uint numel;
  uint flags;
  uint64_t s[3];  // scalars: in0/in1/in2 by value, or op parameters
VKML_PUSH_END(Push, 7 * 8 + 18 * 4)
VKML_ASSERT_OFFSET(Push, s, 4 * 8 + 18 * 4)
VKML_CONTRACT_END(elementwise_detail)

#endif
