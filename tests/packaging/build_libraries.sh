#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A second build of the SDK's libraries for the packaging test, with the other
# linkage than the build under test (BUILD_SHARED_LIBS=SHARED), configured for
# /usr as a distribution builds it (GNUInstallDirs then picks the multiarch
# libdir): only the libraries, no tests, benchmarks, examples or CLI. Configured
# once; later runs only bring it up to date.
#
#   tests/packaging/build_libraries.sh SOURCE_DIR BUILD_DIR SHARED [CMAKE_ARG...]
#
# CMAKE_ARG: the generator, compiler, compiler launcher (ccache) and
# BABELQUEUE_WITH_* choices of the build under test. BQ_PACKAGING_JOBS
# (default 2) is the number of parallel compile jobs.
set -euo pipefail
source_dir="$1"
build_dir="$2"
shared="$3"
shift 3
start=$SECONDS
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS="$shared" \
    -DCMAKE_INSTALL_PREFIX=/usr -DBABELQUEUE_BUILD_TESTS=OFF -DBABELQUEUE_BUILD_BENCHMARKS=OFF \
    -DBABELQUEUE_BUILD_EXAMPLES=OFF -DBABELQUEUE_BUILD_TOOLS=OFF -DBABELQUEUE_INSTALL=ON "$@" >/dev/null
fi
cmake --build "$build_dir" --parallel "${BQ_PACKAGING_JOBS:-2}" >/dev/null
echo "libraries built (BUILD_SHARED_LIBS=$shared) in $((SECONDS - start)) s: $build_dir"
