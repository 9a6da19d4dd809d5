#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Publish and consume+ack throughput of the embedded transports (memory and
# SQLite), with one and four handler threads, through `babelqueue bench`.
# Usage: bench/transport_throughput.sh [--markdown] BABELQUEUE_BINARY [MESSAGES] [SIZE]
# Prints one JSON line per run, then a table; with --markdown only the table
# of docs/benchmarks.md, under a line saying when, on which commit and on what
# machine it was measured (bench/regenerate_docs.py puts it there).
set -euo pipefail
markdown=0
if [[ "${1:-}" == "--markdown" ]]; then
  markdown=1
  shift
fi
bq="$1"
messages="${2:-20000}"
size="${3:-256}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

measured="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import machine; print(machine.describe(sys.argv[1]))' "$here")"
results=()
for transport in memory sqlite; do
  for concurrency in 1 4; do
    case "$transport" in
      memory) url="memory://bench-$concurrency" ;;
      sqlite) url="sqlite://$work/bench-$concurrency.db" ;;
    esac
    line=$("$bq" --url "$url" bench "bench-$transport-$concurrency" --messages "$messages" --size "$size" \
      --concurrency "$concurrency" --json)
    [[ $markdown -eq 1 ]] || echo "$line"
    results+=("$line")
  done
done

printf '%s\n' "${results[@]}" | python3 -c '
import json, os, sys
sys.path.insert(0, sys.argv[1])
import machine
markdown, measured, messages, size = sys.argv[2] == "1", sys.argv[3], sys.argv[4], sys.argv[5]
rows = [json.loads(line) for line in sys.stdin]
if markdown:
    print(f"{measured}, load average {machine.load()} at the end; {int(messages)} messages of {size} bytes of data:")
    print()
    print("| transport | concurrency | publish msg/s | consume + ack msg/s |")
    print("| --- | ---: | ---: | ---: |")
    spaced = lambda value: format(value, ",.0f").replace(",", " ")
    for r in rows:
        print("| %s | %d | %s | %s |" % (r["transport"], r["concurrency"], spaced(r["publish_msgs_per_s"]),
                                         spaced(r["consume_msgs_per_s"])))
else:
    print("%-10s %11s %16s %16s %12s" % ("transport", "concurrency", "publish msg/s", "consume msg/s", "p50 lat ms"))
    for r in rows:
        print("%-10s %11d %16.0f %16.0f %12.1f" % (r["transport"], r["concurrency"], r["publish_msgs_per_s"],
                                                  r["consume_msgs_per_s"], r["latency_ms"]["p50"]))
    # The target of docs/benchmarks.md: SQLite consume + ack at concurrency 4
    # at least a quarter of the memory transport measured in this same run.
    consume = {(r["transport"], r["concurrency"]): r["consume_msgs_per_s"] for r in rows}
    if consume.get(("memory", 4)):
        ratio = consume[("sqlite", 4)] / consume[("memory", 4)]
        print("sqlite / memory consume + ack at concurrency 4: %.3fx (target >= 0.25x) %s"
              % (ratio, "PASS" if ratio >= 0.25 else "FAIL"))
' "$here" "$markdown" "$measured" "$messages" "$size"
