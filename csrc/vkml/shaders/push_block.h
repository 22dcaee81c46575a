// The frame of every shaders/<kernel>_push.h: one list of fields that the launcher
// reads as a C++ struct in vkml::ops::<ns> and the kernel as its GLSL push-constant
// block `pc` (or a table record), with the same bytes under GLSL's scalar layout. The
// sizes (and any offset that padding could move) are asserted on the C++ side.
#ifndef VKML_PUSH_BLOCK_H
#define VKML_PUSH_BLOCK_H

// clang-format off: one line a macro, as GLSL's preprocessor reads them
#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
// GLSL's type names, so that one field list reads in both languages.
#define VKML_CONTRACT_BEGIN(ns) namespace vkml::ops::ns { using uint = uint32_t; using ivec3 = int32_t[3];
#define VKML_CONTRACT_END(ns) }
#define VKML_PUSH_BEGIN(Name) struct Name {
// Vulkan guarantees 128 bytes of push constants (Pipelines::kPushConstantBytes).
#define VKML_PUSH_END(Name, bytes) }; static_assert(sizeof(Name) == (bytes) && sizeof(Name) <= 128);
#define VKML_ASSERT_SIZE(Type, bytes) static_assert(sizeof(Type) == (bytes));
#define VKML_ASSERT_OFFSET(Type, field, bytes) static_assert(offsetof(Type, field) == (bytes));
#else
#define VKML_CONTRACT_BEGIN(ns)
#define VKML_CONTRACT_END(ns)
#define VKML_PUSH_BEGIN(Name) layout(push_constant, scalar) uniform Name {
#define VKML_PUSH_END(Name, bytes) } pc;
#define VKML_ASSERT_SIZE(Type, bytes)
#define VKML_ASSERT_OFFSET(Type, field, bytes)
#endif
// clang-format on

#endif
