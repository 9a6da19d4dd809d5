#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# babelqueue::pulsar next to the Python pulsar-client (libpulsar) on the same
# broker, in one run, alternating the sides: publish batched, publish one by
# one, consume + ack at concurrency 1 and 4 (of topics filled by
# pulsar-client's batching producer, for both sides). Prints a table of the
# best of ROUNDS rounds per side.
#   bench/pulsar/run.sh [--markdown] BUILD_DIR [N] [ROUNDS]
# --markdown prints the report as a block for the docs: a line saying when, on
# which commit and on what machine it ran, then the report
# (bench/with_machine.py; bench/regenerate_docs.py puts it in place).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [[ "${1:-}" == --markdown ]]; then
  shift
  exec python3 "$root/bench/with_machine.py" "$here/run.sh" "$@"
fi
build="$1"
n="${2:-20000}"
rounds="${3:-3}"
sync_n=$(( n / 10 ))
url="$("$root/scripts/broker" url pulsar | tail -n 1)"
cpp="$build/bench/pulsar/babelqueue_bench_pulsar"
py() { "$root/scripts/python-sdk" run "$here/pulsar_client_bench.py" "$@" 2>/dev/null; }
run_id="$(date +%s)-$$"
declare -A best

record() {  # record SIDE LINE
  local key rate
  key="$1 $(cut -d' ' -f1 <<<"$2")${3:-}"
  rate="$(cut -d' ' -f4 <<<"$2")"
  if [[ -z "${best[$key]:-}" ]] || (( rate > best[$key] )); then best[$key]="$rate"; fi
  printf '  %-6s %s%s\n' "$1" "$2" "${3:-}"
}

for (( r = 1; r <= rounds; r++ )); do
  echo "round $r"
  for side in cpp py; do
    [[ $(( r % 2 )) == 0 ]] && side="$([[ $side == cpp ]] && echo py || echo cpp)"
    q="bench-$side-$run_id-$r"
    if [[ $side == cpp ]]; then run=("$cpp" "$url"); else run=(py "$url"); fi
    record "$side" "$("${run[@]}" publish-batch "$q-b" "$n")"
    record "$side" "$("${run[@]}" publish-sync "$q-s" "$sync_n")"
    # Both sides consume the same kind of topic: filled by pulsar-client's
    # batching producer, as Java, Go and libpulsar producers send by default.
    for c in 1 4; do
      py "$url" publish-batch "$q-c$c" "$n" >/dev/null
      record "$side" "$("${run[@]}" consume "$q-c$c" "$n" "$c")" " c$c"
    done
  done
done

echo
printf '%-22s %12s %12s %8s\n' measurement "sdk msg/s" "libpulsar" "ratio"
for m in "publish-batch" "publish-sync" "consume c1" "consume c4"; do
  c="${best[cpp $m]:-0}"; p="${best[py $m]:-0}"
  printf '%-22s %12s %12s %7s%%\n' "$m" "$c" "$p" "$(( p > 0 ? c * 100 / p : 0 ))"
done
