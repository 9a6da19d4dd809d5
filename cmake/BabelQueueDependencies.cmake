# bq_find_dependency(<package> TARGET <imported target> PKG <pkg-config module> [REQUIRED])
#
# Looks for a dependency the way Debian ships it: first a CMake package config,
# then a pkg-config module (made into the same imported target name), so the
# rest of the build only ever names <imported target>.
include_guard(GLOBAL)

function(bq_find_dependency package)
  cmake_parse_arguments(ARG "REQUIRED" "TARGET;PKG" "" ${ARGN})
  if(TARGET ${ARG_TARGET})
    set(${package}_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  find_package(${package} CONFIG QUIET)
  if(TARGET ${ARG_TARGET})
    set(${package}_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND AND ARG_PKG)
    pkg_check_modules(bq_pc_${package} QUIET IMPORTED_TARGET GLOBAL ${ARG_PKG})
    if(bq_pc_${package}_FOUND)
      add_library(${ARG_TARGET} ALIAS PkgConfig::bq_pc_${package})
      set(${package}_FOUND TRUE PARENT_SCOPE)
      return()
    endif()
  endif()
  set(${package}_FOUND FALSE PARENT_SCOPE)
  if(ARG_REQUIRED)
    message(FATAL_ERROR "${package} not found (neither a CMake config nor pkg-config '${ARG_PKG}'). "
                        "Run scripts/setup to install the Debian packages the build needs.")
  endif()
endfunction()
