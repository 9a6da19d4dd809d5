#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds consumer projects against an installed (and relocated) package,
# PREFIX, as a user's would be: the core consumer with find_package(BabelQueue)
# and with pkg-config, then, when the build has transports, one program that
# links and registers every installed transport component, again both ways.
#
#   tests/packaging/packaging_test.sh PREFIX REGISTRATION_CPP [TRANSPORT...]
#
# REGISTRATION_CPP is generated from the project's list of transports
# (tests/CMakeLists.txt): it registers each TRANSPORT given here.
set -euo pipefail
prefix="$1"
registration="$2"
shift 2
transports=("$@")
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cmake -S "$here/consumer" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer-build" >/dev/null
out=$("$work/consumer-build/consumer")
echo "find_package: $out"
[[ "$out" == *"urn:babel:orders:created"* ]]

libdir=$(find "$prefix" -name 'babelqueue-core.pc' -printf '%h\n' | head -n 1)
flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs babelqueue-core)
c++ -std=c++20 "$here/consumer/main.cpp" $flags -o "$work/consumer-pc"
out=$("$work/consumer-pc")
echo "pkg-config: $out"
[[ "$out" == *"urn:babel:orders:created"* ]]
passed=2

# Every transport component: find_package with COMPONENTS, then pkg-config,
# each linking every transport library. The programs open URLs, so they run in
# the scratch directory.
if (( ${#transports[@]} )); then
  list="$(IFS=';'; echo "${transports[*]}")"
  cmake -S "$here/transports" -B "$work/transports-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    "-DBQ_TRANSPORTS=$list" "-DBQ_REGISTRATION=$registration" >/dev/null
  cmake --build "$work/transports-build" >/dev/null
  (cd "$work" && "$work/transports-build/transports")
  passed=$((passed + 1))
  modules=()
  for transport in "${transports[@]}"; do modules+=("babelqueue-$transport"); done
  flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs "${modules[@]}")
  c++ -std=c++20 -I"$here/transports" "$here/transports/main.cpp" "$registration" $flags -o "$work/transports-pc"
  (cd "$work" && "$work/transports-pc")
  passed=$((passed + 1))
fi
echo "$passed passed, 0 failed"
