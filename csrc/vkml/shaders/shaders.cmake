# GLSL -> SPIR-V at build time, one glslc call per (shader, variant), each with a
# depfile so that editing an included file rebuilds only what uses it. All SPIR-V
# is embedded into one generated C++ file with a name -> blob registry.
#
# A variant list sits in the first lines of each shader:
#   //! variant f32 -DSTORE_F32
#   //! variant f16 -DSTORE_F16
# A shader without such lines is compiled once, under its file name.

set(VKML_SHADER_DIR "${CMAKE_CURRENT_SOURCE_DIR}/csrc/vkml/shaders")
set(VKML_SPV_DIR "${CMAKE_CURRENT_BINARY_DIR}/spv")
set(VKML_SHADER_INCLUDE_DIR "${CMAKE_CURRENT_BINARY_DIR}/generated")
file(MAKE_DIRECTORY "${VKML_SPV_DIR}" "${VKML_SHADER_INCLUDE_DIR}")

file(GLOB VKML_SHADER_SOURCES CONFIGURE_DEPENDS "${VKML_SHADER_DIR}/*.comp")
set(VKML_SPV_FILES "")
foreach(src ${VKML_SHADER_SOURCES})
  get_filename_component(base "${src}" NAME_WE)
  file(STRINGS "${src}" variant_lines REGEX "^//! variant ")
  # Re-run configure when the variant list of a shader changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${src}")
  if(NOT variant_lines)
    set(variant_lines "//! variant _")
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
