# SPDX-License-Identifier: Apache-2.0
# Installs the libraries, headers, the CLI, a relocatable CMake package
# (find_package(BabelQueue COMPONENTS ...)) and one pkg-config file per library.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(BQ_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/BabelQueue")
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/babelqueue")
get_property(BQ_COMPONENTS GLOBAL PROPERTY BABELQUEUE_COMPONENTS)
cmake_path(IS_ABSOLUTE CMAKE_INSTALL_LIBDIR BQ_LIBDIR_IS_ABSOLUTE)
cmake_path(IS_ABSOLUTE CMAKE_INSTALL_INCLUDEDIR BQ_INCLUDEDIR_IS_ABSOLUTE)

# Headers go with the library they belong to: core's (the top level of
# include/babelqueue, detail/ and memory/) always, a transport's folder only
# when that transport was built.
set(BQ_HEADER_DIR "${PROJECT_SOURCE_DIR}/include/babelqueue")
file(GLOB BQ_CORE_HEADERS "${BQ_HEADER_DIR}/*.hpp")
install(FILES ${BQ_CORE_HEADERS} DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/babelqueue")
install(DIRECTORY "${BQ_HEADER_DIR}/detail" "${BQ_HEADER_DIR}/memory" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/babelqueue")
# A transport's idempotency store header goes only with the idempotency component.
set(BQ_HEADER_EXCLUDES "")
if(NOT "idempotency" IN_LIST BQ_COMPONENTS)
  set(BQ_HEADER_EXCLUDES PATTERN "idempotency_store.hpp" EXCLUDE)
endif()
foreach(component IN LISTS BQ_COMPONENTS)
  if(IS_DIRECTORY "${BQ_HEADER_DIR}/${component}")
    install(DIRECTORY "${BQ_HEADER_DIR}/${component}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/babelqueue"
            ${BQ_HEADER_EXCLUDES})
  endif()
endforeach()
install(FILES "${PROJECT_BINARY_DIR}/generated/include/babelqueue/version.hpp"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/babelqueue")

set(BQ_PC_PREFIX "@BQ_PC_PREFIX@")  # replaced at install time, see below
if(BQ_LIBDIR_IS_ABSOLUTE)
  set(BQ_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(BQ_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(BQ_INCLUDEDIR_IS_ABSOLUTE)
  set(BQ_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(BQ_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
foreach(component IN LISTS BQ_COMPONENTS)
  install(TARGETS babelqueue_${component} EXPORT BabelQueue-${component}
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  install(EXPORT BabelQueue-${component} NAMESPACE babelqueue:: DESTINATION "${BQ_CMAKE_DIR}"
          FILE BabelQueue-${component}-targets.cmake)
  get_property(requires GLOBAL PROPERTY BABELQUEUE_PC_REQUIRES_${component})
  get_property(requires_private GLOBAL PROPERTY BABELQUEUE_PC_REQUIRES_PRIVATE_${component})
  get_property(libs_private GLOBAL PROPERTY BABELQUEUE_PC_LIBS_PRIVATE_${component})
  set(BQ_PC_NAME "babelqueue-${component}")
  set(BQ_PC_REQUIRES_LINES "")
  if(requires)
    string(APPEND BQ_PC_REQUIRES_LINES "Requires: ${requires}\n")
  endif()
  if(requires_private)
    string(APPEND BQ_PC_REQUIRES_LINES "Requires.private: ${requires_private}\n")
  endif()
  set(BQ_PC_LIBS_PRIVATE_LINE "")
  if(libs_private)
    set(BQ_PC_LIBS_PRIVATE_LINE "Libs.private: ${libs_private}\n")
  endif()
  configure_file("${PROJECT_SOURCE_DIR}/cmake/babelqueue.pc.in"
                 "${PROJECT_BINARY_DIR}/pkgconfig/babelqueue-${component}.pc.in" @ONLY)
endforeach()

# pkg-config files name the paths installed to (pkg-config cannot find a
# multiarch libdir such as lib/x86_64-linux-gnu from the file's own place), so
# they are written at install time, when the prefix is known: the one
# configured, or the one `cmake --install --prefix` gives. Until then the
# prefix stays a placeholder.
if(BQ_LIBDIR_IS_ABSOLUTE)
  set(BQ_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(BQ_PC_DIR "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
# (One scratch folder per destination: installs to several at once do not
# share files.)
install(CODE "
  set(BQ_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  string(MD5 bq_destination \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(bq_scratch \"${PROJECT_BINARY_DIR}/pkgconfig/installed/\${bq_destination}\")
  foreach(component ${BQ_COMPONENTS})
    configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/babelqueue-\${component}.pc.in\"
                   \"\${bq_scratch}/babelqueue-\${component}.pc\" @ONLY)
    file(INSTALL \"\${bq_scratch}/babelqueue-\${component}.pc\" DESTINATION \"${BQ_PC_DIR}\")
  endforeach()
")

set(BQ_CONFIG_COMPONENT_DEPS "")
foreach(component IN LISTS BQ_COMPONENTS)
  get_property(deps GLOBAL PROPERTY BABELQUEUE_COMPONENT_DEPS_${component})
  get_property(needs GLOBAL PROPERTY BABELQUEUE_COMPONENT_NEEDS_${component})
  string(APPEND BQ_CONFIG_COMPONENT_DEPS "set(_bq_deps_${component} \"${deps}\")\n")
  string(APPEND BQ_CONFIG_COMPONENT_DEPS "set(_bq_needs_${component} \"${needs}\")\n")
endforeach()

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/BabelQueueConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/BabelQueueConfig.cmake" INSTALL_DESTINATION "${BQ_CMAKE_DIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/BabelQueueConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/BabelQueueConfig.cmake" "${PROJECT_BINARY_DIR}/BabelQueueConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/BabelQueueDependencies.cmake"
        DESTINATION "${BQ_CMAKE_DIR}")
