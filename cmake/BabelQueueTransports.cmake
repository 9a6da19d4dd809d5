# SPDX-License-Identifier: Apache-2.0
# The transports of the SDK. The top-level CMakeLists.txt lists them, one
# bq_transport() line each; everything else that names transports reads that
# list:
#
#   - the setting BABELQUEUE_WITH_<NAME> (AUTO, ON or OFF) and
#     add_subdirectory(src/<name>), which defines the library
#     babelqueue::<name>;
#   - babelqueue::builtin (the CLI, the robustness agent, the benchmarks): it
#     registers each built transport and adds its conformance section;
#   - tests/<name> and bench/<name>, when those folders exist;
#   - the packaging test: the consumer of every installed transport component;
#   - tests/brokers: the CTest fixture of each broker, and the self-test of
#     scripts/broker for those brokers.
#
# Conventions a transport folder follows (docs/adding-a-transport.md):
#   - src/<name>/dependencies.cmake, if the transport has dependencies, finds
#     them with bq_find_dependency(... REQUIRED), and nothing else: it is read
#     before src/<name> is added, to decide whether the transport can be built;
#   - src/<name>/CMakeLists.txt defines babelqueue::<name> (bq_add_library) and
#     makes it a component of the package (bq_install_component);
#   - its public header declares babelqueue::<name>::register_transport(); the
#     header is babelqueue/<name>/transport.hpp unless the library's target
#     property BABELQUEUE_REGISTER_HEADER names another (bq_transport_header);
#   - its conformance section, if it has one, is the internal target
#     babelqueue_<name>_conformance, whose include directories hold
#     <name>_conformance.hpp declaring
#     babelqueue::<name>::add_conformance_section(conformance::Runner&).
include_guard(GLOBAL)

# bq_transport(<name> [BROKER <broker>] DOC "<what it is and needs>")
#
# Declares a transport. BROKER names the broker its tests need, one of those
# scripts/broker runs (scripts/lib/broker-<broker>.sh); a transport without a
# server (embedded, in-process) has none.
function(bq_transport name)
  cmake_parse_arguments(ARG "" "BROKER;DOC" "" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_DOC)
    message(FATAL_ERROR "bq_transport(${name} [BROKER broker] DOC \"...\"): unexpected '${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT name MATCHES "^[a-z][a-z0-9]*$")
    message(FATAL_ERROR "bq_transport: '${name}' is not a transport name (lower-case letters and digits)")
  endif()
  if(NOT EXISTS "${PROJECT_SOURCE_DIR}/src/${name}/CMakeLists.txt")
    message(FATAL_ERROR "bq_transport(${name}): src/${name}/CMakeLists.txt does not exist")
  endif()
  if(ARG_BROKER AND NOT EXISTS "${PROJECT_SOURCE_DIR}/scripts/lib/broker-${ARG_BROKER}.sh")
    message(FATAL_ERROR "bq_transport(${name}): scripts/lib/broker-${ARG_BROKER}.sh does not exist")
  endif()
  string(TOUPPER "${name}" upper)
  # AUTO: built when its dependencies are found, else left out with one line
  # saying why; ON: built, a missing dependency is an error; OFF: left out.
  # (A project that adds this one with add_subdirectory() may set the
  # variable before it does.)
  set(BABELQUEUE_WITH_${upper} AUTO CACHE STRING
                                    "Build the ${name} transport, babelqueue::${name}: ${ARG_DOC}. AUTO, ON or OFF")
  set_property(CACHE BABELQUEUE_WITH_${upper} PROPERTY STRINGS AUTO ON OFF)
  set_property(GLOBAL APPEND PROPERTY BABELQUEUE_TRANSPORTS ${name})
  set_property(GLOBAL PROPERTY BABELQUEUE_TRANSPORT_BROKER_${name} "${ARG_BROKER}")
  set_property(GLOBAL PROPERTY BABELQUEUE_TRANSPORT_DOC_${name} "${ARG_DOC}")
endfunction()

# bq_add_transports(): add_subdirectory(src/<name>) for each transport that
# BABELQUEUE_WITH_<NAME> and its dependencies let build, in the order they
# were declared.
function(bq_add_transports)
  get_property(transports GLOBAL PROPERTY BABELQUEUE_TRANSPORTS)
  foreach(name IN LISTS transports)
    get_property(doc GLOBAL PROPERTY BABELQUEUE_TRANSPORT_DOC_${name})
    bq_add_optional_directory(${name} transport "${doc}")
  endforeach()
endfunction()

# bq_component(<name> DOC "<what it is and needs>"): an optional component
# that is not a transport (field encryption, the outbox), with the same
# setting BABELQUEUE_WITH_<NAME> (AUTO, ON or OFF) and the same
# src/<name>/dependencies.cmake convention; added at once.
function(bq_component name)
  cmake_parse_arguments(ARG "" "DOC" "" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_DOC)
    message(FATAL_ERROR "bq_component(${name} DOC \"...\"): unexpected '${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  string(TOUPPER "${name}" upper)
  set(BABELQUEUE_WITH_${upper} AUTO CACHE STRING "Build babelqueue::${name}: ${ARG_DOC}. AUTO, ON or OFF")
  set_property(CACHE BABELQUEUE_WITH_${upper} PROPERTY STRINGS AUTO ON OFF)
  bq_add_optional_directory(${name} component "${ARG_DOC}")
endfunction()

# bq_add_optional_directory(<name> <kind> <doc>): add_subdirectory(src/<name>)
# when BABELQUEUE_WITH_<NAME> and the dependencies src/<name>/dependencies.cmake
# looks for let build it. In developer mode (BABELQUEUE_DEVELOPER_MODE, CI)
# AUTO means ON: everything must build there.
function(bq_add_optional_directory name kind doc)
  string(TOUPPER "${name}" upper)
  set(setting "BABELQUEUE_WITH_${upper}")
  string(TOUPPER "${${setting}}" mode)
  if(mode STREQUAL "AUTO" AND BABELQUEUE_DEVELOPER_MODE)
    set(mode ON)
  elseif(NOT mode STREQUAL "AUTO")
    if(${setting})
      set(mode ON)
    else()
      return()
    endif()
  endif()
  if(EXISTS "${PROJECT_SOURCE_DIR}/src/${name}/dependencies.cmake")
    set_property(GLOBAL PROPERTY BABELQUEUE_MISSING_DEPENDENCIES "")
    set(BQ_PROBING_TRANSPORT ${name})
    include("${PROJECT_SOURCE_DIR}/src/${name}/dependencies.cmake")
    unset(BQ_PROBING_TRANSPORT)
    get_property(missing GLOBAL PROPERTY BABELQUEUE_MISSING_DEPENDENCIES)
    if(missing)
      string(JOIN ", " missing ${missing})
      set(why "missing ${missing}; it is ${doc}")
      if(mode STREQUAL "ON")
        message(FATAL_ERROR "BabelQueue: ${setting} is ${${setting}} but the ${name} ${kind} cannot be built: ${why}. "
                            "Install what it needs (scripts/setup) or set ${setting}=OFF.")
      endif()
      message(STATUS "BabelQueue: the ${name} ${kind} is left out: ${why} (${setting}=ON makes this an error)")
      return()
    endif()
  endif()
  add_subdirectory("${PROJECT_SOURCE_DIR}/src/${name}" "${PROJECT_BINARY_DIR}/src/${name}")
  if(NOT TARGET babelqueue::${name})
    message(FATAL_ERROR "src/${name}/CMakeLists.txt must define the library babelqueue::${name} (bq_add_library)")
  endif()
endfunction()

# bq_built_transports(<out>): the transports this build contains, in order.
function(bq_built_transports out)
  get_property(transports GLOBAL PROPERTY BABELQUEUE_TRANSPORTS)
  set(built "")
  foreach(name IN LISTS transports)
    if(TARGET babelqueue::${name})
      list(APPEND built ${name})
    endif()
  endforeach()
  set(${out} "${built}" PARENT_SCOPE)
endfunction()

# bq_transport_broker(<name> <out>): the broker the transport's tests need, or "".
function(bq_transport_broker name out)
  get_property(broker GLOBAL PROPERTY BABELQUEUE_TRANSPORT_BROKER_${name})
  set(${out} "${broker}" PARENT_SCOPE)
endfunction()

# bq_built_brokers(<out>): the brokers the built transports need, each once.
function(bq_built_brokers out)
  bq_built_transports(transports)
  set(brokers "")
  foreach(name IN LISTS transports)
    bq_transport_broker(${name} broker)
    if(broker)
      list(APPEND brokers ${broker})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES brokers)
  set(${out} "${brokers}" PARENT_SCOPE)
endfunction()

# bq_transport_header(<name> <out>): the public header that declares
# babelqueue::<name>::register_transport(), as it is #included.
function(bq_transport_header name out)
  get_target_property(header babelqueue_${name} BABELQUEUE_REGISTER_HEADER)
  if(NOT header)
    set(header "babelqueue/${name}/transport.hpp")
  endif()
  set(${out} "${header}" PARENT_SCOPE)
endfunction()

# bq_add_transport_subdirectories(<folder>): add_subdirectory(<folder>/<name>)
# for each built transport that has such a folder (tests/, bench/).
function(bq_add_transport_subdirectories folder)
  bq_built_transports(transports)
  foreach(name IN LISTS transports)
    if(EXISTS "${folder}/${name}/CMakeLists.txt")
      add_subdirectory("${folder}/${name}")
    endif()
  endforeach()
endfunction()

# bq_transport_code(<out> LINE "<template>" TRANSPORTS <name>...): one line of
# generated C++ per transport, from a template in which @NAME@ is the
# transport's name, @HEADER@ its public header (as #included) and @REGISTER@
# its registration function, babelqueue::<name>::register_transport. For
# example LINE "#include <@HEADER@>" or LINE "{\"@NAME@\", &@REGISTER@},". (A
# semicolon would split the template: CMake passes arguments as lists.)
function(bq_transport_code out)
  cmake_parse_arguments(ARG "" "LINE" "TRANSPORTS" ${ARGN})
  set(code "")
  foreach(name IN LISTS ARG_TRANSPORTS)
    bq_transport_header(${name} header)
    set(line "${ARG_LINE}")
    string(REPLACE "@NAME@" "${name}" line "${line}")
    string(REPLACE "@HEADER@" "${header}" line "${line}")
    string(REPLACE "@REGISTER@" "babelqueue::${name}::register_transport" line "${line}")
    string(APPEND code "${line}\n")
  endforeach()
  set(${out} "${code}" PARENT_SCOPE)
endfunction()
