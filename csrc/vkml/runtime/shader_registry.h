#pragma once
// Compiled SPIR-V embedded at build time (see tools/embed_spirv.py), found by the
// Shader enum that the build writes from the shaders' own variant lines
// (tools/shader_variants.py), so that a misspelt variant does not compile.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "vkml_shader_ids.h"

namespace vkml {

struct ShaderBlob {
  const char* name;
  const uint32_t* code;
  size_t bytes;
};

// nullptr for Shader::none and for a variant the build could not compile.
const ShaderBlob* shader_blob(Shader s);
// The variant's name ("gemm_f16"), as profiles and the pipeline cache's list show it.
const char* shader_name(Shader s);
// By name, for the cache's list of pipelines and for tests; nullptr when none was built.
const ShaderBlob* find_shader(std::string_view name);
std::span<const ShaderBlob> all_shaders();

}  // namespace vkml
