#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build tree into PREFIX by way of another directory, then moves
# it there: the CMake package must be relocatable. The docs-sample test builds
# against PREFIX (the CTest fixture packaging_prefix) with find_package. (The
# pkg-config files name the prefix installed to: packaging_test.sh checks them.)
#
#   tests/packaging/install.sh BUILD_DIR PREFIX
set -euo pipefail
build_dir="$1"
prefix="$2"
rm -rf "$prefix" "$prefix.installed"
cmake --install "$build_dir" --prefix "$prefix.installed" >/dev/null
mv "$prefix.installed" "$prefix"
echo "installed into $prefix.installed, moved to $prefix"
