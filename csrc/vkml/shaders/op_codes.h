// Elementwise op codes shared by C++ (vkml/ops/elementwise.h) and GLSL
// (elementwise.comp, as specialization constant 0). The ranges decide how many
// inputs the kernel loads: unary < OP_ADD <= binary < OP_ADDCMUL <= ternary.
//
// Op parameters: typed ones (in the compute dtype) are read with scalar_value(k)
// from slot k; float ones with fparam(j): j = 0, 1 are the low/high halves of
// slot 2, j = 2, 3 those of slot 0 (the adapter keeps inputs out of used slots).
// The float64 kernels read them as doubles, one per slot, with dparam(j): slots 2, 0, 1.
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
#define OP_TAN 33
#define OP_ASIN 34
#define OP_ACOS 35
#define OP_ATAN 36
#define OP_SINH 37
#define OP_COSH 38
#define OP_ASINH 39
#define OP_ACOSH 40
#define OP_ATANH 41
#define OP_LOG10 42
#define OP_ERF 43
#define OP_ERFC 44
#define OP_ERFINV 45
#define OP_FRAC 46
#define OP_SIGNBIT 47
#define OP_LOGIT 48       // fparam 0 = eps (< 0: none)
#define OP_NAN_TO_NUM 49  // s1, s2, s0 = nan, posinf, neginf replacements (typed)
#define OP_ISPOSINF 50
#define OP_ISNEGINF 51
#define OP_LGAMMA 52
#define OP_DIGAMMA 53
#define OP_ROUND_DECIMALS 54  // s2 = 10^|decimals|; EW_PARAM_FLAG: decimals < 0
#define OP_SINC 55
#define OP_ENTR 56
#define OP_TRIGAMMA 57
#define OP_LEAKY_RELU 60  // s2 = negative slope (typed)
#define OP_ELU 61         // fparam 0, 1, 2 = alpha * scale, scale, input_scale
#define OP_MISH 62
#define OP_HARDSWISH 63
#define OP_HARDSIGMOID 64
#define OP_SOFTPLUS 65    // fparam 0, 1 = beta, threshold
#define OP_SOFTSHRINK 66  // s2 = lambda (typed)
#define OP_HARDSHRINK 67  // s2 = lambda (typed)
#define OP_THRESHOLD 68   // s2 = threshold, s0 = value (typed)
#define OP_LOG_SIGMOID 69
// special functions (special_functions.glsl)
#define OP_I0 70
#define OP_I0E 71
#define OP_I1 72
#define OP_I1E 73
#define OP_NDTRI 74
#define OP_LOG_NDTR 75
#define OP_ERFCX 76
#define OP_AIRY_AI 77
#define OP_BESSEL_J0 78
#define OP_BESSEL_J1 79
#define OP_BESSEL_Y0 80
#define OP_BESSEL_Y1 81
#define OP_MODIFIED_BESSEL_I0 82
#define OP_MODIFIED_BESSEL_I1 83
#define OP_MODIFIED_BESSEL_K0 84
#define OP_MODIFIED_BESSEL_K1 85
#define OP_SCALED_MODIFIED_BESSEL_K0 86
#define OP_SCALED_MODIFIED_BESSEL_K1 87
#define OP_SPHERICAL_BESSEL_J0 88
#define OP_POLYGAMMA 89  // fparam 0 = n (>= 2)
#define OP_ANGLE 90      // real inputs: 0 or pi
#define OP_FREXP_MANTISSA 91
#define OP_FREXP_EXPONENT 92  // the exponent as a float (the adapter converts to int32)
// binary: in0, in1; alpha or other parameter in s2
#define OP_ADD 200
#define OP_SUB 201
#define OP_MUL 202
#define OP_DIV 203
#define OP_MAXIMUM 204
#define OP_MINIMUM 205
#define OP_POW 206
#define OP_EQ 207
#define OP_NE 208
#define OP_LT 209
#define OP_LE 210
#define OP_GT 211
#define OP_GE 212
#define OP_LOGICAL_AND 213
#define OP_LOGICAL_OR 214
#define OP_BITWISE_AND 215
#define OP_BITWISE_OR 216
#define OP_BITWISE_XOR 217
#define OP_THRESHOLD_BACKWARD 218
#define OP_REMAINDER 219
#define OP_FMOD 220
#define OP_ATAN2 221
#define OP_DIV_TRUNC 222
#define OP_DIV_FLOOR 223
#define OP_SIGMOID_BACKWARD 224
#define OP_TANH_BACKWARD 225
#define OP_LOGICAL_XOR 226
#define OP_LERP_SCALAR 227
#define OP_GELU_BACKWARD 228
#define OP_SILU_BACKWARD 229
#define OP_HYPOT 230
#define OP_COPYSIGN 231
#define OP_XLOGY 232
#define OP_FMAX 233
#define OP_FMIN 234
#define OP_SHIFT_LEFT 235
#define OP_SHIFT_RIGHT 236
#define OP_NEXTAFTER 237
#define OP_LOGADDEXP 238
#define OP_LOGADDEXP2 239
#define OP_HEAVISIDE 240
#define OP_XLOG1PY 241
#define OP_ZETA 242
#define OP_IGAMMA 243
#define OP_IGAMMAC 244
#define OP_GCD 245
#define OP_LCM 246
// orthogonal polynomials: in0 = x, in1 = n
#define OP_CHEBYSHEV_T 247
#define OP_CHEBYSHEV_U 248
#define OP_CHEBYSHEV_V 249
#define OP_CHEBYSHEV_W 250
#define OP_SHIFTED_CHEBYSHEV_T 251
#define OP_SHIFTED_CHEBYSHEV_U 252
#define OP_SHIFTED_CHEBYSHEV_V 253
#define OP_SHIFTED_CHEBYSHEV_W 254
#define OP_HERMITE_H 255
#define OP_HERMITE_HE 256
#define OP_LAGUERRE_L 257
#define OP_LEGENDRE_P 258
// activation backward: in0 = grad, in1 = the saved input (or output)
#define OP_GELU_TANH_BACKWARD 260
#define OP_LOGIT_BACKWARD 261       // fparam 0 = eps (< 0: none)
#define OP_LEAKY_RELU_BACKWARD 262  // s2 = negative slope (typed)
#define OP_ELU_BACKWARD 263         // fparams as OP_ELU; EW_PARAM_FLAG: in1 is the result
#define OP_HARDSWISH_BACKWARD 264
#define OP_HARDSIGMOID_BACKWARD 265
#define OP_HARDTANH_BACKWARD 266  // s2 = min, s0 = max (typed)
#define OP_SOFTPLUS_BACKWARD 267  // fparam 0, 1 = beta, threshold
#define OP_SHRINK_BACKWARD 268    // s2 = lambda (typed; soft and hard shrink)
#define OP_LOG_SIGMOID_BACKWARD 269
#define OP_MISH_BACKWARD 270
#define OP_PRELU 271           // in0 = x, in1 = weight
#define OP_GLU 272             // in0 = first half, in1 = gate
#define OP_GLU_BACKWARD_A 273  // grad, gate
// ternary: in0, in1, in2; value in s2
#define OP_ADDCMUL 400
#define OP_ADDCDIV 401
#define OP_LERP_TENSOR 402
#define OP_WHERE 403
#define OP_CLAMP_TENSOR 404
#define OP_GLU_BACKWARD_B 405         // grad, first half, gate
#define OP_PRELU_BACKWARD_INPUT 406   // grad, x, weight
#define OP_PRELU_BACKWARD_WEIGHT 407  // grad, x, weight (weight only broadcasts)

// flags
#define EW_CONTIGUOUS 1u
#define EW_SCALAR0 2u       // in0 is given by value in s0
#define EW_SCALAR1 4u       // in1 in s1
#define EW_SCALAR2 8u       // in2 in s2
#define EW_IN0_BOOL 16u     // in0 is stored as uint8 (where's condition)
#define EW_BOOL_OUT 32u     // normalise the result to 0/1 (bool outputs of arithmetic)
#define EW_HAS_MIN 64u      // OP_CLAMP: lower bound present (s1)
#define EW_HAS_MAX 128u     // OP_CLAMP: upper bound present (s2)
#define EW_PARAM_FLAG 256u  // an op-specific switch (see the op)
#define EW_VEC4 512u        // contiguous, float, 4-element aligned: a thread per quad
#endif
