# SPDX-License-Identifier: Apache-2.0
# The transports of the SDK. The top-level CMakeLists.txt lists them, one
# bq_transport() line each; everything else that names transports reads that
# list:
#
#   - the option BABELQUEUE_WITH_<NAME> and add_subdirectory(src/<name>), which
#     defines the library babelqueue::<name>;
#   - babelqueue::builtin (the CLI, the robustness agent, the benchmarks): it
#     registers each built transport and adds its conformance section;
#   - tests/<name> and bench/<name>, when those folders exist;
#   - the packaging test: the consumer of every installed transport component;
#   - tests/brokers: the CTest fixture of each broker, and the self-test of
#     scripts/broker for those brokers.
#
# Conventions a transport folder follows (docs/adding-a-transport.md):
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
  option(BABELQUEUE_WITH_${upper} "Build the ${name} transport, babelqueue::${name}: ${ARG_DOC}" ON)
  set_property(GLOBAL APPEND PROPERTY BABELQUEUE_TRANSPORTS ${name})
  set_property(GLOBAL PROPERTY BABELQUEUE_TRANSPORT_BROKER_${name} "${ARG_BROKER}")
endfunction()

# bq_add_transports(): add_subdirectory(src/<name>) for each transport whose
# BABELQUEUE_WITH_<NAME> is on, in the order they were declared.
function(bq_add_transports)
  get_property(transports GLOBAL PROPERTY BABELQUEUE_TRANSPORTS)
  foreach(name IN LISTS transports)
    string(TOUPPER "${name}" upper)
    if(BABELQUEUE_WITH_${upper})
      add_subdirectory("${PROJECT_SOURCE_DIR}/src/${name}" "${PROJECT_BINARY_DIR}/src/${name}")
      if(NOT TARGET babelqueue::${name})
        message(FATAL_ERROR "src/${name}/CMakeLists.txt must define the library babelqueue::${name} (bq_add_library)")
      endif()
    endif()
  endforeach()
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
