#version 450
// A device-to-device copy of whole words, one per thread. NVIDIA runs vkCmdCopyBuffer
// between device-local buffers on a copy engine at about 0.8 TB/s; a kernel moves them
// at the memory's speed (H100, 2026-12-05: FFTs spent three quarters of their time in
// the copies around VkFFT).
//! variant w16 -DWORD16
//! variant w4
#include "common.glsl"
#include "copy_words_push.h"

#ifdef WORD16
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BufWords { uvec4 v[]; };
#else
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer BufWords { uint v[]; };
#endif

const uint WG = COPY_WORDS_WG;
layout(local_size_x = WG) in;

void main() {
  uint i = linear_id();
  if (i >= pc.words) return;
  BufWords(pc.dst).v[i] = BufWords(pc.src).v[i];
}
