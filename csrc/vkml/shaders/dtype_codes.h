// Element type codes shared by C++ (vkml/core/dtype.h) and GLSL.
#ifndef VKML_DTYPE_CODES_H
#define VKML_DTYPE_CODES_H
#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2
#define DT_F64 3
#define DT_I64 4
#define DT_I32 5
#define DT_I16 6
#define DT_I8 7
#define DT_U8 8
#define DT_BOOL 9
#endif
