#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the decode fuzzer with clang and libFuzzer (ASan + UBSan, the library
# instrumented too) and fuzzes for about SECONDS seconds.
#
#   fuzz/run.sh SECONDS [extra libFuzzer flags...]
#
# Environment:
#   BQ_FUZZ_BUILD_DIR  build directory (default build-fuzz, relative to the repository root)
#   BQ_FUZZ_CXX        the clang++ to use (default clang++-14)
#   BQ_FUZZ_ARTIFACTS  where crash/leak/timeout inputs are copied on failure
#                      (default <build dir>/fuzz-artifacts)
#
# The run starts from a copy of fuzz/corpus/decode in a temporary directory (the
# checked-in seeds stay as they are) and first replays fuzz/regressions/. It
# does all of that on each JSON kernel (docs/adr/0036): the one simdjson picks
# for this CPU, about three quarters of the time, then the portable one
# (BABELQUEUE_JSON_KERNEL=portable) from the corpus the first run grew. It
# exits non-zero on any crash, invariant violation, sanitizer report, leak or
# timeout. Needs cmake, clang-14, libclang-rt-14-dev and libfuzzer-14-dev
# (scripts/setup installs them).
set -euo pipefail

if [[ $# -lt 1 || ! "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: fuzz/run.sh SECONDS [extra libFuzzer flags...]" >&2
  exit 2
fi
seconds="$1"
shift

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BQ_FUZZ_BUILD_DIR:-build-fuzz}"
[[ "$build" = /* ]] || build="$root/$build"
cxx="${BQ_FUZZ_CXX:-clang++-14}"
artifacts_keep="${BQ_FUZZ_ARTIFACTS:-$build/fuzz-artifacts}"

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz/run.sh: $cxx not found (install clang-14 libclang-rt-14-dev libfuzzer-14-dev)" >&2
  exit 2
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

# Only the library and the fuzzer: no tests, tools or optional transports, so a
# machine with just the core's dependencies can fuzz.
cmake -S "$root" -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DBABELQUEUE_BUILD_FUZZERS=ON \
  -DBABELQUEUE_SANITIZERS=address,undefined \
  -DBABELQUEUE_BUILD_TESTS=OFF \
  -DBABELQUEUE_BUILD_BENCHMARKS=OFF \
  -DBABELQUEUE_BUILD_TOOLS=OFF \
  -DBABELQUEUE_BUILD_EXAMPLES=OFF \
  -DBABELQUEUE_WITH_SQLITE=OFF \
  -DBABELQUEUE_INSTALL=OFF >/dev/null
cmake --build "$build" --target babelqueue_fuzz_decode -j "$(nproc)"
fuzzer="$build/fuzz/babelqueue_fuzz_decode"

work="$(mktemp -d "${TMPDIR:-/tmp}/bq-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp -R "$root/fuzz/corpus/decode/." "$work/corpus/"

# Halt on the first report of either sanitizer, with a stack trace; leaks are
# checked after every input that allocated more than it freed (-detect_leaks).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:symbolize=1}"

fail() {
  mkdir -p "$artifacts_keep"
  cp -R "$work/artifacts/." "$artifacts_keep/" 2>/dev/null || true
  echo "fuzz/run.sh: $1; reproducers (if any) in $artifacts_keep" >&2
  exit 1
}

shopt -s nullglob
regressions=()
for f in "$root"/fuzz/regressions/*; do
  [[ -f "$f" && "$f" != *.md ]] && regressions+=("$f")
done
shopt -u nullglob
portable_seconds=$((seconds / 4))
[[ $portable_seconds -ge 1 ]] || portable_seconds=1
best_seconds=$((seconds - portable_seconds))
[[ $best_seconds -ge 1 ]] || best_seconds=1

# fuzz_on KERNEL SECONDS [libFuzzer flags...]: the regressions, then fuzzing
# on that kernel ("" for the one simdjson picks).
fuzz_on() {
  local kernel="$1" time="$2"
  shift 2
  local name="${kernel:-best}"
  if [[ ${#regressions[@]} -gt 0 ]]; then
    echo "fuzz/run.sh: replaying ${#regressions[@]} regression input(s) on the $name kernel"
    BABELQUEUE_JSON_KERNEL="$kernel" "$fuzzer" -detect_leaks=1 -artifact_prefix="$work/artifacts/" "${regressions[@]}" ||
      fail "a regression input fails on the $name kernel"
  fi
  echo "fuzz/run.sh: fuzzing for ${time}s on the $name kernel"
  BABELQUEUE_JSON_KERNEL="$kernel" "$fuzzer" \
    -max_total_time="$time" \
    -detect_leaks=1 \
    -timeout=10 \
    -dict="$root/fuzz/decode.dict" \
    -artifact_prefix="$work/artifacts/" \
    -print_final_stats=1 \
    "$@" \
    "$work/corpus" || fail "the fuzzer found a failure on the $name kernel (exit code $?)"
}

fuzz_on "" "$best_seconds" "$@"
fuzz_on portable "$portable_seconds" "$@"
echo "fuzz/run.sh: no failure in ${seconds}s"
