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

# The libraries' version: VERSION is the project's, SOVERSION what a program
# linked against one release may rely on in the next (docs/adr/0030): the
# major number, or major.minor while the major number is 0 (a 0.x minor
# release may break the ABI, as the CMake package's SameMinorVersion says).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(BQ_SOVERSION "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
else()
  set(BQ_SOVERSION "${PROJECT_VERSION_MAJOR}")
endif()

# A library of the SDK: babelqueue::<name>, file libbabelqueue-<name>, static
# or shared as BUILD_SHARED_LIBS says.
function(bq_add_library name)
  add_library(babelqueue_${name} ${ARGN})
  add_library(babelqueue::${name} ALIAS babelqueue_${name})
  set_target_properties(babelqueue_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME babelqueue-${name}
                                                      POSITION_INDEPENDENT_CODE ON VERSION "${PROJECT_VERSION}"
                                                      SOVERSION "${BQ_SOVERSION}")
  bq_target_settings(babelqueue_${name})
endfunction()

# Marks a library as an installable component of the BabelQueue package
# (cmake/BabelQueueInstall.cmake writes its CMake export and pkg-config file).
#   COMPONENTS: other components of the package its public headers use
#     (babelqueue-core is always one); PRIVATE_COMPONENTS: those it links
#     privately. The CMake package loads both before it.
#   DEPS: "<cmake package>|<imported target>|<pkg-config module>" entries the
#     installed CMake package must find again (a static library's users link
#     them).
#   PC_REQUIRES_PRIVATE: the pkg-config modules of those dependencies;
#   PC_LIBS_PRIVATE: linker flags for a dependency without a usable module.
#     The SDK's public headers include no dependency's header, so pkg-config
#     users need these only to link a static library (pkg-config --static).
#   PC_REQUIRES: the pkg-config modules of dependencies the component's API
#     hands to its users (the outbox takes the caller's sqlite3*, PGconn*),
#     so they link them too.
function(bq_install_component name)
  cmake_parse_arguments(ARG "" "" "COMPONENTS;PRIVATE_COMPONENTS;DEPS;PC_REQUIRES;PC_REQUIRES_PRIVATE;PC_LIBS_PRIVATE"
                        ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bq_install_component(${name}): unexpected '${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  set_property(GLOBAL APPEND PROPERTY BABELQUEUE_COMPONENTS ${name})
  set_property(GLOBAL PROPERTY BABELQUEUE_COMPONENT_DEPS_${name} "${ARG_DEPS}")
  set(needs ${ARG_COMPONENTS} ${ARG_PRIVATE_COMPONENTS})
  set_property(GLOBAL PROPERTY BABELQUEUE_COMPONENT_NEEDS_${name} "${needs}")
  set(requires "")
  if(NOT name STREQUAL "core")
    list(APPEND requires babelqueue-core)
  endif()
  list(TRANSFORM ARG_COMPONENTS PREPEND "babelqueue-")
  list(TRANSFORM ARG_PRIVATE_COMPONENTS PREPEND "babelqueue-")
  list(APPEND requires ${ARG_COMPONENTS} ${ARG_PC_REQUIRES})
  string(JOIN ", " requires ${requires})
  string(JOIN ", " requires_private ${ARG_PRIVATE_COMPONENTS} ${ARG_PC_REQUIRES_PRIVATE})
  string(JOIN " " libs_private ${ARG_PC_LIBS_PRIVATE})
  set_property(GLOBAL PROPERTY BABELQUEUE_PC_REQUIRES_${name} "${requires}")
  set_property(GLOBAL PROPERTY BABELQUEUE_PC_REQUIRES_PRIVATE_${name} "${requires_private}")
  set_property(GLOBAL PROPERTY BABELQUEUE_PC_LIBS_PRIVATE_${name} "${libs_private}")
endfunction()

# BABELQUEUE_SIMD chose the decoder's instruction set at configure time; the
# JSON kernel is now chosen at run time (docs/adr/0036), so the library is
# built for the target's baseline and a value other than auto is refused.
set(BABELQUEUE_SIMD "auto" CACHE STRING "Retired: the JSON kernel is chosen at run time (BABELQUEUE_JSON_KERNEL)")
if(NOT BABELQUEUE_SIMD STREQUAL "auto")
  message(FATAL_ERROR "BABELQUEUE_SIMD=${BABELQUEUE_SIMD} is retired: one build carries every JSON kernel and picks "
                      "the best one the CPU supports when it runs (docs/adr/0036-json-kernel-chosen-at-run-time.md). "
                      "Drop the option; to force the portable kernel set the environment variable "
                      "BABELQUEUE_JSON_KERNEL=portable when the program runs.")
endif()
