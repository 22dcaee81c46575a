// Giles' single-precision polynomial for erfinv(y) / y in w = -log((1 - y)(1 + y)),
// about 1e-7 relative over float's range: erfinv_f's answer before its Newton step
// (float_math.glsl), erfinv_d's starting point (f64_pow_erf.glsl). One list of
// coefficients for both: a macro that defines the function for a type.
#ifndef VKML_ERFINV_ESTIMATE_GLSL
#define VKML_ERFINV_ESTIMATE_GLSL

#define DEFINE_ERFINV_ESTIMATE(T, NAME)  \
  T NAME(T w) {                          \
    T p;                                 \
    if (w < T(5.0)) {                    \
      w -= T(2.5);                       \
      p = T(2.81022636e-08);             \
      p = T(3.43273939e-07) + p * w;     \
      p = T(-3.5233877e-06) + p * w;     \
      p = T(-4.39150654e-06) + p * w;    \
      p = T(0.00021858087) + p * w;      \
      p = T(-0.00125372503) + p * w;     \
      p = T(-0.00417768164) + p * w;     \
      p = T(0.246640727) + p * w;        \
      p = T(1.50140941) + p * w;         \
    } else {                             \
      w = sqrt(w) - T(3.0);              \
      p = T(-0.000200214257);            \
      p = T(0.000100950558) + p * w;     \
      p = T(0.00134934322) + p * w;      \
      p = T(-0.00367342844) + p * w;     \
      p = T(0.00573950773) + p * w;      \
      p = T(-0.0076224613) + p * w;      \
      p = T(0.00943887047) + p * w;      \
      p = T(1.00167406) + p * w;         \
      p = T(2.83297682) + p * w;         \
    }                                    \
    return p;                            \
  }

#endif
