#pragma once
// Compiled SPIR-V embedded at build time (see tools/embed_spirv.py).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace vkml {

struct ShaderBlob {
  const char* name;
  const uint32_t* code;
  size_t bytes;
};

// nullptr when no shader of that name was built.
const ShaderBlob* find_shader(std::string_view name);
std::span<const ShaderBlob> all_shaders();

}  // namespace vkml
