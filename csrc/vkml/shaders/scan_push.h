// The push constants of shaders/scan.comp, written once for its launcher
// (vkml/ops/scan.cpp, C++) and the kernel (GLSL), which reads the bytes as laid out here.
// The 64-bit fields come first, so C++ adds no padding between fields.
#ifndef VKML_SCAN_PUSH_H
#define VKML_SCAN_PUSH_H

// Ops (specialization constant 0): vkml::ops::ScanOp's values.
#define SCAN_SUM 0
#define SCAN_PROD 1
#define SCAN_MAX 2
#define SCAN_MIN 3
#define SCAN_LSE 4

// Modes (specialization constant 1); see scan.comp.
#define SCAN_LINE 0
#define SCAN_CHUNKS 1
#define SCAN_CARRY 2

#include "push_block.h"

VKML_CONTRACT_BEGIN(scan_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t in_ptr;
  uint64_t out_ptr;
  uint64_t idx_ptr;      // int64 indices (max / min)
  uint64_t part;         // [outer, nchunks] chunk totals (mode 1), f32 for f16 / bf16 data
  uint64_t part_idx;     // [outer, nchunks] int64 element index of each total
  uint64_t scanned;      // mode 2: the inclusive scan of `part` along the chunks
  uint64_t scanned_idx;  // mode 2: int64 chunk index behind each scanned value
  uint outer;
  uint n;
  uint inner;
  uint chunk;                       // elements per chunk (a multiple of WG)
  uint nchunks;                     // chunks per row; totals are written when > 1
VKML_PUSH_END(Push, 7 * 8 + 6 * 4)  // 4 bytes of tail padding
VKML_CONTRACT_END(scan_detail)

#endif
