#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Kafka benchmark against the broker of scripts/broker (started when
# it is not running).
#   bench/kafka/run.sh [--markdown] BUILD_DIR/bench/kafka/babelqueue_bench_kafka [--messages N] [--rounds R] ...
# --markdown prints the report as a block for the docs: a line saying when, on
# which commit and on what machine it ran, then the report
# (bench/with_machine.py; bench/regenerate_docs.py puts it in place). A missed
# target (the benchmark's exit status 3) is part of the report there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ "${1:-}" == --markdown ]]; then
  shift
  exec python3 "$root/bench/with_machine.py" --missed-status 3 "$root/bench/kafka/run.sh" "$@"
fi
bench="$1"
shift
"$root/scripts/broker" status kafka >/dev/null 2>&1 || "$root/scripts/broker" start kafka >/dev/null
url="$("$root/scripts/broker" url kafka | tail -n 1)"
exec "$bench" --url "$url" "$@"
