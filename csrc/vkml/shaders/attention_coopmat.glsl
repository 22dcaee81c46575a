// Shared by the matrix-unit attention kernels (attention_forward_coopmat.comp,
// attention_backward_coopmat.comp): fp16 or bf16 operands staged in shared memory as
// 16-bit values, products on the GPU's matrix units (VK_KHR_cooperative_matrix) with
// fp32 accumulation, softmax statistics in fp32.
//
// A workgroup has WARPS subgroups; each owns MM consecutive rows of the workgroup's
// BR = WARPS * MM owned rows, and the kernels stream BC rows of the other operands at
// a time. Every product a subgroup makes is one of two shapes:
//   SCORES: an MM x BC block of A B^T, A its owned rows and B the streamed rows (both
//           [row][dim] in shared memory), over EP dims; stored as floats in the
//           subgroup's scratch (`Ss`, SP floats a row), which the lanes then read.
//   ACCUMULATE: ACC (MM x ND, ND / MN accumulator fragments) += T B, T an MM x BC tile
//           the subgroup wrote ([row][col], TP elements a row) and B a streamed
//           [col][dim] operand.
// The emulated variants (EMULATED) do that work in plain arithmetic, lane l owning
// elements l, l + SG, ... of each MM x MN fragment, so the staging, masking, softmax
// and edge handling around the matrix units are tested on any device (lavapipe), as
// gemm_coopmat.comp's are.
//
// bf16 (BF16) is compiled as fp16 and retyped at the SPIR-V level (tools/spirv_bf16.py):
// operands and probabilities are staged as uint16_t bits, so only fragments carry the
// 16-bit float type, which is never computed with (see gemm_coopmat.comp).
//
// Specialization constants 0 = EP (head dims rounded up to a multiple of 32), 1 = BC,
// 2 = WG (threads), 3 = MM, 4 = MN, 5 = MK (the fragment shape), 6 = SG (subgroup size);
// the backward's mode is 7.
#extension GL_KHR_shader_subgroup_basic : require
#ifndef EMULATED
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#if defined(BF16)
#define ST_BF16
#else
#define ST_F16
#endif
#include "common.glsl"
#include "float_store.glsl"
#include "attention_common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const uint EP = 64;
layout(constant_id = 1) const uint BC = 32;
layout(constant_id = 2) const uint WG = 128;
layout(constant_id = 3) const uint MM = 16;
layout(constant_id = 4) const uint MN = 16;
layout(constant_id = 5) const uint MK = 16;
layout(constant_id = 6) const uint SG = 32;

const uint WARPS = WG / SG;
const uint BR = WARPS * MM;
const uint EPL = MM * MN / SG;  // fragment elements per lane
// Shared row pitches, padded by 8 halves (4 floats): fragment loads and stores need
// 16-byte aligned rows, and the padding moves successive rows to other banks.
const uint OP = EP + 8u;            // [row][dim] operands
const uint TP = BC + 8u;            // a subgroup's [row][col] 16-bit tiles
const uint SP = (BC > MN ? BC : MN) + 4u;  // a subgroup's float scratch
// The lanes that work on a row of a subgroup's MM x BC scores: LPR lanes a row, each
// lane RPL rows RSTEP apart, CPL columns LPR apart.
const uint LPR = SG >= MM ? SG / MM : 1u;
const uint RPL = SG >= MM ? 1u : MM / SG;
const uint RSTEP = SG / LPR;
const uint CPL = BC / LPR;

#include "coopmat_elements.glsl"

// Rows [row0, row0 + NR) of head bh's [rows, n] operand into TILE (quads, OP elements a
// row) at element offset AT, zeros past its ends; a quad is one 8-byte load where the
// operand is aligned for it. A macro: GLSL passes arrays by value, shared ones too.
#define LOAD_ROWS(TILE, AT, NR, BASE, TM_FLAG, BH, ROW0, ROWS, N)                      \
  for (uint idx_ = gl_LocalInvocationID.x; idx_ < (NR) * (EP / 4u); idx_ += WG) {      \
    uint r_ = idx_ / (EP / 4u), c_ = idx_ % (EP / 4u) * 4u;                            \
    ELEM4 x_ = ELEM4(0);                                                               \
    if ((ROW0) + r_ < (ROWS) && c_ < (N)) {                                            \
      uint o_ = row_offset(TM_FLAG, BH, (ROW0) + r_, ROWS, N) + c_;                    \
      uint64_t a_ = (BASE) + uint64_t(o_) * 2u;                                        \
      if (c_ + 3u < (N) && (a_ & 7ul) == 0ul) {                                        \
        x_ = BufE4(a_).v[0];                                                           \
      } else {                                                                         \
        [[unroll]] for (uint w_ = 0u; w_ < 4u; ++w_)                                   \
          if (c_ + w_ < (N)) x_[w_] = BufE(BASE).v[o_ + w_];                           \
      }                                                                                \
    }                                                                                  \
    TILE[((AT) + r_ * OP + c_) / 4u] = x_;                                             \
  }

// Loops over fragments: unrolled for the matrix units (fragment arrays take constant
// indices), not in the emulation, whose compile time on lavapipe unrolling multiplied.
#ifdef EMULATED
#define UNROLL
#else
#define UNROLL [[unroll]]
#endif

#ifdef EMULATED
#define ACC_DECL(NAME, FRAGS) float NAME[(FRAGS) * EPL]
#define ACC_ZERO(NAME, FRAGS) \
  [[unroll]] for (uint z_ = 0u; z_ < (FRAGS) * EPL; ++z_) NAME[z_] = 0.0
#else
#define ACC_TYPE coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator>
#define ACC_DECL(NAME, FRAGS) ACC_TYPE NAME[FRAGS]
#define ACC_ZERO(NAME, FRAGS) \
  [[unroll]] for (uint z_ = 0u; z_ < (FRAGS); ++z_) NAME[z_] = ACC_TYPE(0.0)
#endif

// SCORES: Ss[SAT + r * SP + c] = sum over d < EP of A[AAT + r * OP + d] * B[BAT + c * OP + d]
// for r < MM, c < BC. The caller has the operands staged and a barrier behind it, and
// holds the scratch free; a subgroup barrier follows, so its lanes may read the scores.
#ifdef EMULATED
#define SCORES(A, AAT, B, BAT, SAT)                                                    \
  {                                                                                    \
    for (uint i_ = lane; i_ < MM * BC; i_ += SG) {                                     \
      uint r_ = i_ / BC, c_ = i_ % BC;                                                 \
      float s_ = 0.0;                                                                  \
      for (uint d_ = 0u; d_ < EP; ++d_)                                                \
        s_ = fma(elem_value(staged(A, (AAT) + r_ * OP + d_)),                          \
                 elem_value(staged(B, (BAT) + c_ * OP + d_)), s_);                     \
      Ss[(SAT) + r_ * SP + c_] = s_;                                                   \
    }                                                                                  \
    subgroupBarrier();                                                                 \
  }
#else
#define SCORES(A, AAT, B, BAT, SAT)                                                    \
  {                                                                                    \
    ACC_DECL(s_, BC / MN);                                                             \
    ACC_ZERO(s_, BC / MN);                                                             \
    [[unroll]] for (uint d_ = 0u; d_ < EP; d_ += MK) {                                 \
      coopmat<float16_t, gl_ScopeSubgroup, MM, MK, gl_MatrixUseA> fa_;                 \
      coopMatLoad(fa_, A, ((AAT) + d_) / 4u, OP / 4u, gl_CooperativeMatrixLayoutRowMajor); \
      [[unroll]] for (uint j_ = 0u; j_ < BC / MN; ++j_) {                              \
        coopmat<float16_t, gl_ScopeSubgroup, MK, MN, gl_MatrixUseB> fb_;               \
        coopMatLoad(fb_, B, ((BAT) + j_ * MN * OP + d_) / 4u, OP / 4u,                 \
                    gl_CooperativeMatrixLayoutColumnMajor);                            \
        s_[j_] = coopMatMulAdd(fa_, fb_, s_[j_]);                                      \
      }                                                                                \
    }                                                                                  \
    [[unroll]] for (uint j_ = 0u; j_ < BC / MN; ++j_)                                  \
      coopMatStore(s_[j_], Ss, (SAT) + j_ * MN, SP, gl_CooperativeMatrixLayoutRowMajor); \
    subgroupBarrier();                                                                 \
  }
#endif

// ACCUMULATE: ACC += T B, T the subgroup's MM x BC tile at TAT (TP a row), B streamed
// [col][dim] rows at BAT (OP a row), ACC ND / MN fragments of MM x MN. T was written
// before a subgroup barrier.
#ifdef EMULATED
#define ACCUMULATE(ACC, ND, T, TAT, B, BAT)                                            \
  for (uint j_ = 0u; j_ < (ND) / MN; ++j_) {                                           \
    for (uint e_ = 0u; e_ < EPL; ++e_) {                                               \
      uint i_ = lane + e_ * SG, r_ = i_ / MN, d_ = j_ * MN + i_ % MN;                  \
      float s_ = ACC[j_ * EPL + e_];                                                   \
      for (uint c_ = 0u; c_ < BC; ++c_)                                                \
        s_ = fma(elem_value(staged(T, (TAT) + r_ * TP + c_)),                          \
                 elem_value(staged(B, (BAT) + c_ * OP + d_)), s_);                     \
      ACC[j_ * EPL + e_] = s_;                                                         \
    }                                                                                  \
  }
#else
#define ACCUMULATE(ACC, ND, T, TAT, B, BAT)                                            \
  [[unroll]] for (uint c_ = 0u; c_ < BC; c_ += MK) {                                   \
    coopmat<float16_t, gl_ScopeSubgroup, MM, MK, gl_MatrixUseA> fa_;                   \
    coopMatLoad(fa_, T, ((TAT) + c_) / 4u, TP / 4u, gl_CooperativeMatrixLayoutRowMajor); \
    [[unroll]] for (uint j_ = 0u; j_ < (ND) / MN; ++j_) {                              \
      coopmat<float16_t, gl_ScopeSubgroup, MK, MN, gl_MatrixUseB> fb_;                 \
      coopMatLoad(fb_, B, ((BAT) + c_ * OP + j_ * MN) / 4u, OP / 4u,                   \
                  gl_CooperativeMatrixLayoutRowMajor);                                 \
      ACC[j_] = coopMatMulAdd(fa_, fb_, ACC[j_]);                                      \
    }                                                                                  \
  }
#endif

// Fragment j of ACC, element e of this lane (row i / MN, column i % MN, i = lane + e * SG)
// passed through FN(row, col, value): in the real variants through the subgroup's
// scratch at SAT (the caller holds it free; barriers around it).
#ifdef EMULATED
#define FOR_EACH_ELEMENT(ACC, J, SAT, BODY)                                            \
  for (uint e_ = 0u; e_ < EPL; ++e_) {                                                 \
    uint i_ = lane + e_ * SG, er = i_ / MN, ec = i_ % MN;                              \
    float ev = ACC[(J) * EPL + e_];                                                    \
    BODY;                                                                              \
  }
#else
#define FOR_EACH_ELEMENT(ACC, J, SAT, BODY)                                            \
  coopMatStore(ACC[J], Ss, SAT, SP, gl_CooperativeMatrixLayoutRowMajor);               \
  subgroupBarrier();                                                                   \
  for (uint e_ = 0u; e_ < EPL; ++e_) {                                                 \
    uint i_ = lane + e_ * SG, er = i_ / MN, ec = i_ % MN;                              \
    float ev = Ss[(SAT) + er * SP + ec];                                               \
    BODY;                                                                              \
  }                                                                                    \
  subgroupBarrier();
#endif
