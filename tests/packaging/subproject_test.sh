#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# BabelQueue as a part of another project (tests/packaging/subproject, through
# FetchContent and so add_subdirectory), with
# librdkafka made absent (CMAKE_DISABLE_FIND_PACKAGE_RdKafka): the project asks
# for SQLite, leaves Kafka to AUTO and turns the other transports off.
#   1. The configure succeeds and says in one line that Kafka is left out.
#   2. The build makes only the libraries asked for (core and sqlite: no
#      tests, benchmarks, examples or CLI), and the program runs.
#   3. With BABELQUEUE_WITH_KAFKA=ON the configure fails, naming what is missing.
#
#   tests/packaging/subproject_test.sh SOURCE_DIR BUILD_DIR TRANSPORT,TRANSPORT,... [CMAKE_ARG...]
#
# BUILD_DIR: the project's build directory, kept between runs so that a later
# run only brings it up to date; TRANSPORT: every transport the project
# declares; CMAKE_ARG: the generator, compiler and compiler launcher to use.
set -uo pipefail
source_dir="$1"
build_dir="$2"
IFS=',' read -r -a declared <<<"$3"
shift 3
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/check.sh"

args=(-DBQ_SOURCE_DIR="$source_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_DISABLE_FIND_PACKAGE_RdKafka=ON
  -DBABELQUEUE_WITH_IDEMPOTENCY=OFF -DBABELQUEUE_WITH_SCHEMA=OFF -DBABELQUEUE_WITH_OTEL=OFF
  -DBABELQUEUE_WITH_METRICS=OFF -DBABELQUEUE_WITH_GDPR=OFF -DBABELQUEUE_WITH_OUTBOX=OFF -DBABELQUEUE_WITH_POSTGRES=OFF "$@")
for transport in "${declared[@]}"; do
  case "$transport" in
    sqlite | kafka) ;;
    *) args+=("-DBABELQUEUE_WITH_${transport^^}=OFF") ;;
  esac
done

# ---- 1. configure ---------------------------------------------------------------------------
out=$(cmake -S "$here/subproject" -B "$build_dir" "${args[@]}" 2>&1)
check "configure without librdkafka succeeds" 0 $?
check "one line says the kafka transport is left out" 1 "$(grep -c "kafka transport is left out" <<<"$out")"
contains "the line names the setting that makes it an error" "BABELQUEUE_WITH_KAFKA=ON makes this an error" "$out"
contains "the line names what is missing" "missing RdKafka" "$out"
check "no other transport is mentioned" "" "$(grep -E "transport is left out" <<<"$out" | grep -v kafka)"

# ---- 2. build -------------------------------------------------------------------------------
start=$SECONDS
cmake --build "$build_dir" --parallel "${BQ_PACKAGING_JOBS:-2}" >"$work/build.log" 2>&1
status=$?
check "the subproject builds" 0 $status
(( status == 0 )) || tail -n 30 "$work/build.log"
echo "# built in $((SECONDS - start)) s"
libraries=$(cd "$build_dir" && find . -name 'libbabelqueue-*' -printf '%f\n' | sort | tr '\n' ' ')
check "only the libraries asked for are built" "libbabelqueue-core.a libbabelqueue-sqlite.a " "$libraries"
check "no CLI, tests, benchmarks or examples are built" "" \
  "$(cd "$build_dir" && find . -type f -executable -name 'babelqueue*' -o -type f -name '*_tests' -o -type f -name 'example_*')"
(cd "$work" && "$build_dir/app")
check "the program runs on the subproject's libraries" 0 $?

# ---- 3. asked for explicitly ----------------------------------------------------------------
out=$(cmake -S "$here/subproject" -B "$work/build-required" "${args[@]}" -DBABELQUEUE_WITH_KAFKA=ON 2>&1)
check "configure with BABELQUEUE_WITH_KAFKA=ON and no librdkafka fails" 1 $?
out=$(tr -s ' \n' ' ' <<<"$out")  # CMake wraps an error's lines
contains "the error names the setting" "BABELQUEUE_WITH_KAFKA is ON but the kafka transport cannot be built" "$out"
contains "the error names what is missing and what it needs" "missing RdKafka" "$out"
contains "the error says which package provides it" "librdkafka-dev" "$out"
finish
