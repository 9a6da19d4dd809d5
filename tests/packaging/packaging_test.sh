#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs a build as a distribution package would (DESTDIR=STAGE cmake
# --install BUILD_DIR --prefix PREFIX), checks what was installed, then builds
# and runs consumers against the staged tree as a user's would be built
# against PREFIX:
#   - the metadata: every pkg-config file names PREFIX, its libdir (multiarch
#     or not) and the license; shared libraries carry their version and soname;
#   - find_package(BabelQueue COMPONENTS core TRANSPORT...): the core consumer
#     and one program that registers every transport;
#   - pkg-config alone (--static for static libraries): with PKG_CONFIG_MODE
#     "each", one program per component, linked with that component's flags
#     only; with "all", one program for every component at once.
#
#   tests/packaging/packaging_test.sh BUILD_DIR PREFIX PKG_CONFIG_MODE LICENSE SOVERSION GENERATED_DIR [TRANSPORT...]
#
# GENERATED_DIR holds the sources generated from the project's list of
# transports (tests/CMakeLists.txt): registration.cpp registers every
# TRANSPORT, registration-NAME.cpp only NAME.
set -euo pipefail
build_dir="$1"
prefix="$2"
mode="$3"
license="$4"
soversion="$5"
generated="$6"
shift 6
transports=("$@")
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; passed=$((passed + 1)); }

# ---- install under DESTDIR ------------------------------------------------------------------
stage="$work/stage"
DESTDIR="$stage" cmake --install "$build_dir" --prefix "$prefix" >/dev/null
staged="$stage$prefix"
core_pc=$(find "$staged" -name babelqueue-core.pc | head -n 1)
[[ -n "$core_pc" ]] || fail "no babelqueue-core.pc under $staged"
pc_dir="$(dirname "$core_pc")"
lib_dir="$(dirname "$pc_dir")"
libdir="${lib_dir#"$stage"}"  # as installed, e.g. /usr/lib/x86_64-linux-gnu
if compgen -G "$lib_dir/libbabelqueue-core.so*" >/dev/null; then linkage=shared; else linkage=static; fi
echo "installed into $prefix (libdir $libdir, $linkage libraries) under $stage"

components=(core)
for optional in idempotency schema gdpr outbox postgres; do
  [[ -f "$pc_dir/babelqueue-$optional.pc" ]] && components+=("$optional")
done
components+=("${transports[@]}")

# ---- what was installed ---------------------------------------------------------------------
for pc in "$pc_dir"/babelqueue-*.pc; do
  name="$(basename "$pc" .pc)"
  [[ "$(PKG_CONFIG_PATH="$pc_dir" pkg-config --variable=prefix "$name")" == "$prefix" ]] ||
    fail "$name.pc: prefix is not $prefix"
  [[ "$(PKG_CONFIG_PATH="$pc_dir" pkg-config --variable=libdir "$name")" == "$libdir" ]] ||
    fail "$name.pc: libdir is not $libdir"
  grep -qx "License: $license" "$pc" || fail "$name.pc: no 'License: $license' line"
done
ok "pkg-config files: prefix $prefix, libdir $libdir, License: $license"
[[ -f "$staged/share/doc/babelqueue/LICENSE" ]] || fail "share/doc/babelqueue/LICENSE not installed"
if [[ $linkage == shared ]]; then
  for component in "${components[@]}"; do
    lib="$lib_dir/libbabelqueue-$component.so"
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    [[ "$soname" == "libbabelqueue-$component.so.$soversion" ]] || fail "$lib: soname '$soname'"
    [[ -L "$lib" && -L "$lib_dir/$soname" && -f "$(readlink -f "$lib")" ]] || fail "$lib: no versioned file and links"
  done
  ok "shared libraries: soname libbabelqueue-NAME.so.$soversion, versioned files"
else
  for component in "${components[@]}"; do
    [[ -f "$lib_dir/libbabelqueue-$component.a" ]] || fail "libbabelqueue-$component.a not installed"
  done
  ok "static libraries installed"
fi

# ---- find_package ---------------------------------------------------------------------------
run() {  # run PROGRAM: runs it in the scratch directory (the transports open URLs there)
  (cd "$work" && LD_LIBRARY_PATH="$lib_dir" "$@")
}
configured=$(cmake -S "$here/consumer" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$staged" \
  -DCMAKE_BUILD_TYPE=Release "-DBQ_EXPECTED_LICENSE=$license") || fail "find_package consumer: configure"
cmake --build "$work/consumer-build" >/dev/null
out=$(run "$work/consumer-build/consumer")
[[ "$out" == *"urn:babel:orders:created"* ]] || fail "find_package consumer printed: $out"
ok "find_package(BabelQueue COMPONENTS core): $out"

# One version: the CMake package's, the pkg-config files', the headers'
# (the consumer prints kVersion) and the CLI's, where it is installed.
package_version=$(sed -n 's/.*BabelQueue_VERSION=//p' <<<"$configured")
pc_version=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --modversion babelqueue-core)
[[ -n "$package_version" && "$pc_version" == "$package_version" ]] ||
  fail "the CMake package says '$package_version', pkg-config '$pc_version'"
[[ "$out" == "babelqueue $package_version:"* ]] || fail "the headers' kVersion differs from $package_version: $out"
versions="CMake package, pkg-config, kVersion"
if [[ -x "$staged/bin/babelqueue" ]]; then
  cli_version=$(LD_LIBRARY_PATH="$lib_dir" "$staged/bin/babelqueue" --version)
  [[ "$cli_version" == "$package_version" || "$cli_version" == "babelqueue $package_version" ]] ||
    fail "babelqueue --version printed '$cli_version', the package is $package_version"
  versions+=", babelqueue --version"
fi
ok "one version, $package_version: $versions"
if (( ${#transports[@]} )); then
  list="$(IFS=';'; echo "${transports[*]}")"
  cmake -S "$here/transports" -B "$work/transports-build" -DCMAKE_PREFIX_PATH="$staged" -DCMAKE_BUILD_TYPE=Release \
    "-DBQ_TRANSPORTS=$list" "-DBQ_REGISTRATION=$generated/registration.cpp" >/dev/null
  cmake --build "$work/transports-build" >/dev/null
  run "$work/transports-build/transports" || fail "find_package transports consumer"
  ok "find_package(BabelQueue COMPONENTS core ${transports[*]})"
fi

# ---- pkg-config alone -----------------------------------------------------------------------
# PKG_CONFIG_SYSROOT_DIR puts the staged tree in front of every path the
# files name, as for any DESTDIR or sysroot.
# The linker finds a shared library's own babelqueue dependencies (artemis
# needs amqp10) where the dynamic linker would, which for /usr and /usr/local
# includes the libdir; the staged copy needs -rpath-link to stand for that.
static_flag=()
[[ $linkage == static ]] && static_flag=(--static)
pkg_flags() {
  PKG_CONFIG_SYSROOT_DIR="$stage" PKG_CONFIG_PATH="$pc_dir" pkg-config "${static_flag[@]}" --cflags --libs "$@" || return 1
  [[ $linkage == shared ]] && echo "-Wl,-rpath-link,$lib_dir"
  return 0
}
sources_of() {  # sources_of COMPONENT: the consumer program of one component
  case "$1" in
    core) echo "$here/consumer/main.cpp" ;;
    idempotency | schema | gdpr | outbox | postgres) echo "$here/components/$1.cpp" ;;
    *) echo "$here/transports/main.cpp $generated/registration-$1.cpp" ;;
  esac
}
build_with_pkg_config() {  # build_with_pkg_config NAME COMPONENT...: one program from the components' flags
  local name="$1" sources=() modules=()
  shift
  for component in "$@"; do
    # shellcheck disable=SC2207  # paths without spaces
    sources+=($(sources_of "$component"))
    modules+=("babelqueue-$component")
  done
  local flags
  flags=$(pkg_flags "${modules[@]}") || fail "pkg-config ${modules[*]}"
  # shellcheck disable=SC2086  # the flags are words
  c++ -std=c++20 -I"$here/transports" "${sources[@]}" $flags -o "$work/$name" || fail "link with pkg-config ${modules[*]}"
  run "$work/$name" >/dev/null || fail "$name (pkg-config ${modules[*]}) did not run"
}
if [[ $mode == each ]]; then
  for component in "${components[@]}"; do
    build_with_pkg_config "pc-$component" "$component"
  done
  ok "pkg-config ${static_flag[*]:+${static_flag[*]} }--cflags --libs babelqueue-NAME, each alone: ${components[*]}"
else
  # One program registering every transport, and the core consumer, both
  # with the flags of every component.
  modules=()
  for component in "${components[@]}"; do modules+=("babelqueue-$component"); done
  flags=$(pkg_flags "${modules[@]}") || fail "pkg-config ${modules[*]}"
  programs=("pc-core:$here/consumer/main.cpp")
  (( ${#transports[@]} )) && programs+=("pc-all:$here/transports/main.cpp $generated/registration.cpp")
  for program in "${programs[@]}"; do
    # shellcheck disable=SC2086  # the flags and the two sources are words
    c++ -std=c++20 -I"$here/transports" ${program#*:} $flags -o "$work/${program%%:*}" ||
      fail "${program%%:*}: link with pkg-config ${modules[*]}"
    run "$work/${program%%:*}" >/dev/null || fail "${program%%:*} did not run"
  done
  ok "pkg-config ${static_flag[*]:+${static_flag[*]} }--cflags --libs of every component at once: ${components[*]}"
fi
echo "$passed passed, 0 failed"
