# SPDX-License-Identifier: Apache-2.0
# Compile settings shared by the project's own targets. Users who build the
# SDK as a dependency get none of the warnings-as-errors.
include_guard(GLOBAL)

# -Wno-missing-field-initializers: option structs are meant to be filled with
# designated initializers naming only what differs from the defaults
# (`{.queue = "orders"}`), which -Wextra would flag on GCC 12.
set(BQ_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wold-style-cast
                     -Wimplicit-fallthrough -Wno-missing-field-initializers)

function(bq_target_settings target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_compile_options(${target} PRIVATE ${BQ_WARNING_FLAGS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 reports -Wrestrict inside libstdc++'s std::string operator+ at
    # -O2/-O3 for correct code (GCC bug 105329, fixed in GCC 13).
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(BABELQUEUE_DEVELOPER_MODE)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(BABELQUEUE_SANITIZERS)
    target_compile_options(${target} PRIVATE -fsanitize=${BABELQUEUE_SANITIZERS} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${BABELQUEUE_SANITIZERS})
  endif()
endfunction()

# A library of the SDK: babelqueue::<name>, file libbabelqueue-<name>.
function(bq_add_library name)
  add_library(babelqueue_${name} ${ARGN})
  add_library(babelqueue::${name} ALIAS babelqueue_${name})
  set_target_properties(babelqueue_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME babelqueue-${name}
                                                      POSITION_INDEPENDENT_CODE ON)
  bq_target_settings(babelqueue_${name})
endfunction()

# Marks a library as an installable component of the BabelQueue package.
#   DEPS: "<cmake package>|<imported target>|<pkg-config module>" entries the
#         installed package must find again; COMPONENTS: other components of
#         the package it links (loaded before it); PC_REQUIRES: pkg-config
#         modules.
function(bq_install_component name)
  cmake_parse_arguments(ARG "" "" "DEPS;COMPONENTS;PC_REQUIRES;PC_LIBS" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY BABELQUEUE_COMPONENTS ${name})
  set_property(GLOBAL PROPERTY BABELQUEUE_COMPONENT_DEPS_${name} "${ARG_DEPS}")
  set_property(GLOBAL PROPERTY BABELQUEUE_COMPONENT_NEEDS_${name} "${ARG_COMPONENTS}")
  string(JOIN ", " requires ${ARG_PC_REQUIRES})
  set_property(GLOBAL PROPERTY BABELQUEUE_PC_REQUIRES_${name} "${requires}")
  set_property(GLOBAL PROPERTY BABELQUEUE_PC_LIBS_${name} "${ARG_PC_LIBS}")
endfunction()

# simdjson's On-Demand front end (what the decoder uses) is compiled for the
# instruction set the translation unit targets; without flags it is the
# portable scalar kernel, several times slower. BABELQUEUE_SIMD picks:
#   auto     - haswell when the build machine has AVX2/BMI/PCLMUL/LZCNT, else portable
#   haswell  - always (the binaries then need an x86-64 CPU from 2013 or later)
#   portable - the scalar kernel, runs anywhere
set(BABELQUEUE_SIMD "auto" CACHE STRING "Instruction set of the JSON decoder: auto, haswell or portable")
set_property(CACHE BABELQUEUE_SIMD PROPERTY STRINGS auto haswell portable)

function(bq_simd_flags out_var)
  set(mode "${BABELQUEUE_SIMD}")
  if(mode STREQUAL "auto")
    set(mode "portable")
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND EXISTS "/proc/cpuinfo")
      file(READ "/proc/cpuinfo" cpuinfo)
      if(cpuinfo MATCHES " avx2" AND cpuinfo MATCHES " bmi1" AND cpuinfo MATCHES " pclmulqdq" AND cpuinfo MATCHES " abm")
        set(mode "haswell")
      endif()
    endif()
  endif()
  if(mode STREQUAL "haswell")
    set(${out_var} -mavx2 -mbmi -mpclmul -mlzcnt PARENT_SCOPE)
  else()
    set(${out_var} "" PARENT_SCOPE)
  endif()
  message(STATUS "BabelQueue JSON decoder instruction set: ${mode}")
endfunction()
