// Index-map modes of remap.comp, shared by C++ (vkml/ops/remap.h) and GLSL.
#ifndef VKML_REMAP_MODES_H
#define VKML_REMAP_MODES_H
#define REMAP_IDENTITY 0
#define REMAP_FLIP 1
#define REMAP_ROLL 2
#define REMAP_CONSTANT 3
#define REMAP_REFLECT 4
#define REMAP_REPLICATE 5
#define REMAP_CIRCULAR 6
#define REMAP_NEAREST 7
#define REMAP_NEAREST_EXACT 8
#define REMAP_DIV 9
#endif
