#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Publish and consume+ack throughput of the embedded transports (memory and
# SQLite), with one and four handler threads, through `babelqueue bench`.
# Usage: bench/transport_throughput.sh BABELQUEUE_BINARY [MESSAGES] [SIZE]
# Prints one JSON line per run, then a table.
set -euo pipefail
bq="$1"
messages="${2:-20000}"
size="${3:-256}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

results=()
for transport in memory sqlite; do
  for concurrency in 1 4; do
    case "$transport" in
      memory) url="memory://bench-$concurrency" ;;
      sqlite) url="sqlite://$work/bench-$concurrency.db" ;;
    esac
    line=$("$bq" --url "$url" bench "bench-$transport-$concurrency" --messages "$messages" --size "$size" \
      --concurrency "$concurrency" --json)
    echo "$line"
    results+=("$line")
  done
done

printf '%s\n' "${results[@]}" | python3 -c '
import json, sys
print("%-10s %11s %16s %16s %12s" % ("transport", "concurrency", "publish msg/s", "consume msg/s", "p50 lat ms"))
for line in sys.stdin:
    r = json.loads(line)
    print("%-10s %11d %16.0f %16.0f %12.1f" % (r["transport"], r["concurrency"], r["publish_msgs_per_s"],
                                              r["consume_msgs_per_s"], r["latency_ms"]["p50"]))
'
