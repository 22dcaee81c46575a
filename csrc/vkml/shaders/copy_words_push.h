// The push constants of shaders/copy_words.comp, written once for its launcher
// (vkml/ops/copy.cpp, C++) and the kernel (GLSL).
#ifndef VKML_COPY_WORDS_PUSH_H
#define VKML_COPY_WORDS_PUSH_H

// Threads per workgroup (the kernel's local size).
#define COPY_WORDS_WG 256

#include "push_block.h"

VKML_CONTRACT_BEGIN(copy_words_detail)
VKML_PUSH_BEGIN(Push)
  uint64_t dst;
  uint64_t src;
  uint words;  // 16-byte words (variant w16) or 4-byte ones (w4), one per thread
  uint pad;
VKML_PUSH_END(Push, 24)
VKML_CONTRACT_END(copy_words_detail)

#endif
