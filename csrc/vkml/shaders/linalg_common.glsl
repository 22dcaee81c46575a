// What the linear-algebra kernels (linalg.comp, linalg_condensed.comp) share: the real
// type of their dtype variant, coherent views of the matrices, workgroup-wide
// visibility of writes, and LAPACK's failure on non-finite input. Needs pc
// (linalg_push.h).
#ifndef VKML_LINALG_COMMON_GLSL
#define VKML_LINALG_COMMON_GLSL

#if defined(ST_F64)
#define REAL double
#define RSIZE 8u
layout(buffer_reference, scalar, buffer_reference_align = 8) coherent buffer BufR { double v[]; };
#else
#define REAL float
#define RSIZE 4u
layout(buffer_reference, scalar, buffer_reference_align = 4) coherent buffer BufR { float v[]; };
#endif
layout(buffer_reference, scalar, buffer_reference_align = 4) coherent buffer CohI32 { int v[]; };

// Writes by this workgroup become visible to all of it.
void sync() {
  memoryBarrierBuffer();
  barrier();
}

#if defined(ST_F64)
const REAL EPS = 2.220446049250313e-16LF;
const REAL TINY = 1e-290LF;
#else
const REAL EPS = 1.1920929e-7;
const REAL TINY = 1e-35;
#endif

uint group_id() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// Matrix `mat` of a batch of rows x cols ones at `base`: indexed within it in 32 bits.
BufR matrix(uint64_t base, uint mat, uint rows, uint cols) {
  return BufR(base + uint64_t(mat) * rows * cols * RSIZE);
}

// LAPACK fails on non-finite input (the caller raises from info): so do EIGH and SVD,
// with LAPACK's codes (syevd: no convergence, > 0; gesdd: argument 4 illegal, -4).
void flag_non_finite(REAL x, uint mat, int code) {
  if (isnan(x) || isinf(x)) CohI32(pc.info).v[mat] = code;
}

#endif
