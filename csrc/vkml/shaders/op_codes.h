// Elementwise op codes shared by C++ (vkml/ops/elementwise.h) and GLSL
// (elementwise.comp, as specialization constant 0).
#ifndef VKML_OP_CODES_H
#define VKML_OP_CODES_H
// nullary / unary: in0 (a tensor, or a scalar for FILL/ARANGE); params in s1, s2
#define OP_IDENTITY 0
#define OP_NEG 1
#define OP_ABS 2
#define OP_SQRT 3
#define OP_RSQRT 4
#define OP_EXP 5
#define OP_LOG 6
#define OP_RELU 7
#define OP_SIGMOID 8
#define OP_TANH 9
#define OP_RECIPROCAL 10
#define OP_SIN 11
#define OP_COS 12
#define OP_FLOOR 13
#define OP_CEIL 14
#define OP_ROUND 15
#define OP_TRUNC 16
#define OP_SIGN 17
#define OP_CLAMP 18
#define OP_LOG1P 19
#define OP_EXPM1 20
#define OP_ARANGE 21
#define OP_LOGICAL_NOT 22
#define OP_BITWISE_NOT 23
#define OP_ISNAN 24
#define OP_ISINF 25
#define OP_ISFINITE 26
#define OP_SILU 27
#define OP_GELU 28
#define OP_GELU_TANH 29
#define OP_LOG2 30
#define OP_EXP2 31
#define OP_NONZERO 32
// binary: in0, in1; alpha or other parameter in s2
#define OP_ADD 40
#define OP_SUB 41
#define OP_MUL 42
#define OP_DIV 43
#define OP_MAXIMUM 44
#define OP_MINIMUM 45
#define OP_POW 46
#define OP_EQ 47
#define OP_NE 48
#define OP_LT 49
#define OP_LE 50
#define OP_GT 51
#define OP_GE 52
#define OP_LOGICAL_AND 53
#define OP_LOGICAL_OR 54
#define OP_BITWISE_AND 55
#define OP_BITWISE_OR 56
#define OP_BITWISE_XOR 57
#define OP_THRESHOLD_BACKWARD 58
#define OP_REMAINDER 59
#define OP_FMOD 60
#define OP_ATAN2 61
#define OP_DIV_TRUNC 62
#define OP_DIV_FLOOR 63
#define OP_SIGMOID_BACKWARD 64
#define OP_TANH_BACKWARD 65
#define OP_LOGICAL_XOR 66
#define OP_LERP_SCALAR 67
#define OP_GELU_BACKWARD 68
#define OP_SILU_BACKWARD 69
// ternary: in0, in1, in2; value in s2
#define OP_ADDCMUL 80
#define OP_ADDCDIV 81
#define OP_LERP_TENSOR 82
#define OP_WHERE 83
#define OP_CLAMP_TENSOR 84

// flags
#define EW_CONTIGUOUS 1u
#define EW_SCALAR0 2u   // in0 is given by value in s0
#define EW_SCALAR1 4u   // in1 in s1
#define EW_SCALAR2 8u   // in2 in s2
#define EW_IN0_BOOL 16u // in0 is stored as uint8 (where's condition)
#define EW_BOOL_OUT 32u // normalise the result to 0/1 (bool outputs of arithmetic)
#define EW_HAS_MIN 64u  // OP_CLAMP: lower bound present (s1)
#define EW_HAS_MAX 128u // OP_CLAMP: upper bound present (s2)
#endif
