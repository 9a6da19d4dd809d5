#!/usr/bin/env bash
# Installs the build tree, moves the installed tree elsewhere (the package must
# be relocatable), then builds the consumer project against it twice: with
# find_package(BabelQueue) and with pkg-config.
set -euo pipefail
build_dir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/first" >/dev/null
mv "$work/first" "$work/moved"
prefix="$work/moved"

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

# Every transport component, when this build has them all: find_package with
# COMPONENTS, then pkg-config, each linking the five transport libraries.
if [[ -n "$(find "$prefix" -name 'babelqueue-sqs.pc')" && -n "$(find "$prefix" -name 'babelqueue-kafka.pc')" &&
      -n "$(find "$prefix" -name 'babelqueue-rabbitmq.pc')" && -n "$(find "$prefix" -name 'babelqueue-redis.pc')" ]]; then
  cmake -S "$here/transports" -B "$work/transports-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$work/transports-build" >/dev/null
  "$work/transports-build/transports"
  passed=$((passed + 1))
  flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs babelqueue-sqlite babelqueue-redis babelqueue-rabbitmq \
    babelqueue-kafka babelqueue-sqs)
  c++ -std=c++20 "$here/transports/main.cpp" $flags -o "$work/transports-pc"
  "$work/transports-pc"
  passed=$((passed + 1))
fi
echo "$passed passed, 0 failed"
