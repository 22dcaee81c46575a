// The push constants of shaders/index.comp, written once for its launcher
// (vkml/ops/index.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
// The scatter ops are vkml::ops::IndexReduce's values.
#ifndef VKML_INDEX_PUSH_H
#define VKML_INDEX_PUSH_H

// Iteration dims a dispatch handles; more are looped on the host.
#define INDEX_DIMS 4

// Modes (specialization constant 0): vkml::ops::IndexMode's values.
#define INDEX_GATHER 0
#define INDEX_SCATTER 1

// Scatter ops (specialization constant 1): vkml::ops::IndexReduce's values.
#define INDEX_ASSIGN 0
#define INDEX_ADD 1
#define INDEX_MUL 2
#define INDEX_MAX 3
#define INDEX_MIN 4

// flags
#define INDEX_HAS_SRC 1u
#define INDEX_WRAP 2u
#define INDEX_SKIP 4u
#define INDEX_IDX_I32 8u
#define INDEX_BOOL 16u

// Threads per workgroup (the kernel's local size).
#define INDEX_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(index_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t dst;
  uint64_t src;
  uint64_t idx;
  int64_t scalar;  // the value when there is no src: float (float64) bits or an integer
  int64_t skip;    // with INDEX_SKIP: elements with this index value are left out
  int size[INDEX_DIMS];
  int dst_stride[INDEX_DIMS];
  int src_stride[INDEX_DIMS];
  int idx_stride[INDEX_DIMS];
  uint numel;
  int dim_stride;  // applied to the index value (src for gather, dst for scatter)
  int dim_size;    // valid indices: [0, dim_size), and [-dim_size, 0) with INDEX_WRAP
  uint flags;
  // SERIAL: the one invocation walks elements [serial_first, serial_end), in order. The
  // launcher splits the walk into dispatches below the device's loop iteration limit
  // (DeviceInfo::loop_iteration_limit: lavapipe ends longer loops silently).
  uint serial_first;
  uint serial_end;
VKML_PUSH_END(Push, 5 * 8 + 22 * 4)
VKML_CONTRACT_END(index_detail)

#endif
