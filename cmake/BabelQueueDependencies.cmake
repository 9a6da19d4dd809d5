# SPDX-License-Identifier: Apache-2.0
# bq_find_dependency(<package> TARGET <imported target> [PKG <pkg-config module>] [VERSION <min>] [REQUIRED])
#
# Looks for a dependency the way Debian ships it: first a CMake find module or
# package config, then a pkg-config module (made into the same imported target name), so the
# rest of the build only ever names <imported target>.
#
# CMAKE_DISABLE_FIND_PACKAGE_<package>=ON makes the package count as absent,
# by every route (CMake's own meaning of that variable, extended to the
# pkg-config fallback): how a build is tried without one.
#
# While a transport's dependencies are looked for (bq_add_transports), a
# missing REQUIRED one is not an error here: it is added to the global
# property BABELQUEUE_MISSING_DEPENDENCIES, and the transport decides.
include_guard(GLOBAL)

function(bq_find_dependency package)
  cmake_parse_arguments(ARG "REQUIRED" "TARGET;PKG;VERSION" "" ${ARGN})
  if(TARGET ${ARG_TARGET})
    set(${package}_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  set(${package}_FOUND FALSE PARENT_SCOPE)
  if(CMAKE_DISABLE_FIND_PACKAGE_${package})
    bq_dependency_missing(${package} "${ARG_REQUIRED}" "CMAKE_DISABLE_FIND_PACKAGE_${package} is set")
    return()
  endif()
  # A package Debian ships without a usable CMake config or pkg-config file
  # has a finder of its own below, bq_find_<package>().
  if(COMMAND bq_find_${package})
    cmake_language(CALL bq_find_${package} ${ARG_TARGET})
    if(TARGET ${ARG_TARGET})
      set(${package}_FOUND TRUE PARENT_SCOPE)
      return()
    endif()
    bq_dependency_missing(${package} "${ARG_REQUIRED}" "not found")
    return()
  endif()
  # A find module (CMake's FindOpenSSL, FindCURL, FindThreads...) or a
  # package config, whichever CMake finds first.
  find_package(${package} ${ARG_VERSION} QUIET)
  if(TARGET ${ARG_TARGET})
    # Visible to the whole build, as the pkg-config targets below are, so a
    # test or benchmark directory can link it too.
    get_target_property(aliased ${ARG_TARGET} ALIASED_TARGET)
    get_target_property(global ${ARG_TARGET} IMPORTED_GLOBAL)
    if(NOT aliased AND NOT global)
      set_target_properties(${ARG_TARGET} PROPERTIES IMPORTED_GLOBAL TRUE)
    endif()
    set(${package}_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND AND ARG_PKG)
    # One pkg-config prefix per target: a package may provide several.
    string(MAKE_C_IDENTIFIER "bq_pc_${ARG_TARGET}" prefix)
    pkg_check_modules(${prefix} QUIET IMPORTED_TARGET GLOBAL ${ARG_PKG})
    if(${prefix}_FOUND)
      add_library(${ARG_TARGET} ALIAS PkgConfig::${prefix})
      set(${package}_FOUND TRUE PARENT_SCOPE)
      return()
    endif()
  endif()
  bq_dependency_missing(${package} "${ARG_REQUIRED}" "neither a CMake config nor pkg-config '${ARG_PKG}' found")
endfunction()

# A dependency was not found: an error when REQUIRED, unless a transport's
# dependencies are being looked for (BQ_PROBING_TRANSPORT), which collect it.
function(bq_dependency_missing package required why)
  if(BQ_PROBING_TRANSPORT)
    set_property(GLOBAL APPEND PROPERTY BABELQUEUE_MISSING_DEPENDENCIES "${package} (${why})")
  elseif(required)
    message(FATAL_ERROR "${package}: ${why}. Run scripts/setup to install the Debian packages the build needs.")
  endif()
endfunction()

# qpid-proton C++ (Debian: libqpid-proton-cpp12-dev): its pkg-config file names
# a library that does not exist and it has no CMake config. The target links
# the C++ binding and the C libraries it is built on (the core and the
# proactor, which the AMQP client drives itself), never the all-in-one
# libqpid-proton as well, which would load a second copy of the C library.
function(bq_find_QpidProton target)
  find_path(BQ_QPID_PROTON_INCLUDE_DIR proton/container.hpp)
  find_library(BQ_QPID_PROTON_CPP_LIBRARY NAMES qpid-proton-cpp)
  find_library(BQ_QPID_PROTON_CORE_LIBRARY NAMES qpid-proton-core libqpid-proton-core.so.10)
  find_library(BQ_QPID_PROTON_PROACTOR_LIBRARY NAMES qpid-proton-proactor libqpid-proton-proactor.so.1)
  if(NOT BQ_QPID_PROTON_INCLUDE_DIR
     OR NOT BQ_QPID_PROTON_CPP_LIBRARY
     OR NOT BQ_QPID_PROTON_CORE_LIBRARY
     OR NOT BQ_QPID_PROTON_PROACTOR_LIBRARY)
    return()
  endif()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${BQ_QPID_PROTON_INCLUDE_DIR}"
                                             INTERFACE_LINK_LIBRARIES
                                             "${BQ_QPID_PROTON_CPP_LIBRARY};${BQ_QPID_PROTON_CORE_LIBRARY};${BQ_QPID_PROTON_PROACTOR_LIBRARY}")
endfunction()
