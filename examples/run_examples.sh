#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the examples against a fresh SQLite file and checks what they report.
#
#   examples/run_examples.sh BIN_DIR SCENARIO
#
# BIN_DIR holds the built examples (<build>/examples). SCENARIO:
#   pipeline  producer, then worker: every order handled, the flagged one
#             after one retry, the poison body dead-lettered; the DLQ then
#             holds exactly that poison message
#   redrive   a worker allowed a single attempt dead-letters the flagged
#             order; redrive (dry run, then only OrderCreated) sends it back,
#             leaves the poison, and a second worker handles the order
#   signal    a worker with no idle exit stops cleanly on SIGTERM
set -euo pipefail

bin="${1:?usage: run_examples.sh BIN_DIR pipeline|redrive|signal}"
scenario="${2:?usage: run_examples.sh BIN_DIR pipeline|redrive|signal}"
work="$(mktemp -d "${TMPDIR:-/tmp}/bq-examples.XXXXXX")"
trap 'rm -rf "$work"' EXIT
url="sqlite://$work/orders.db"
failures=0

# expect FILE TEXT: the output file contains TEXT (a fixed string).
expect() {
  if grep -qF -- "$2" "$1"; then
    echo "ok: $(basename "$1") says \"$2\""
  else
    echo "FAILED: $(basename "$1") does not say \"$2\"; it said:"
    sed 's/^/    /' "$1"
    failures=$((failures + 1))
  fi
}

run() {  # run LOG PROGRAM ARGS...: runs an example, its output to LOG
  local log="$work/$1"
  shift
  local status=0
  "$@" >"$log" 2>&1 || status=$?
  if [[ $status -ne 0 ]]; then
    echo "FAILED: $* exited with $status:"
    sed 's/^/    /' "$log"
    exit 1
  fi
}

case "$scenario" in
  pipeline)
    run producer.log "$bin/producer" "$url" --orders 6
    expect "$work/producer.log" "published 6 orders and 1 poison message"
    run worker.log "$bin/worker" "$url" --idle-exit 1
    # 6 orders + 1 retry of the flagged one + 1 poison body = 8 deliveries.
    expect "$work/worker.log" "summary: received 8, succeeded 6, failed 1, retried 1, dead-lettered 1 (poison 1), dropped 0"
    expect "$work/worker.log" "order 1003: charged 20.00 EUR to linus@example.com (attempt 2)"
    run dlq.log "$bin/redrive" "$url" --dry-run
    expect "$work/dlq.log" "0 redriven, 1 left in the dead-letter queue"
    expect "$work/dlq.log" "stays: not a readable envelope"
    ;;
  redrive)
    run producer.log "$bin/producer" "$url" --orders 4
    run worker1.log "$bin/worker" "$url" --idle-exit 1 --max-attempts 1
    expect "$work/worker1.log" "summary: received 5, succeeded 3, failed 1, retried 0, dead-lettered 2 (poison 1), dropped 0"
    expect "$work/worker1.log" "dead-lettered to orders.dlq (reason failed, after 1 attempt(s))"
    run redrive.log "$bin/redrive" "$url"
    expect "$work/redrive.log" "0 redriven, 2 left in the dead-letter queue"
    expect "$work/redrive.log" "redrive of urn:babel:orders:created: 1 redriven, 1 left in the dead-letter queue"
    # The replayed order keeps its headers, so it fails once more and then
    # succeeds on its retry: the handler decides, not the redrive.
    run worker2.log "$bin/worker" "$url" --idle-exit 1
    expect "$work/worker2.log" "succeeded 1,"
    expect "$work/worker2.log" "dead-lettered 0 (poison 0)"
    run dlq.log "$bin/redrive" "$url" --dry-run
    expect "$work/dlq.log" "0 redriven, 1 left in the dead-letter queue"
    ;;
  signal)
    "$bin/worker" "$url" --idle-exit 0 >"$work/worker.log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do
      grep -q "consuming" "$work/worker.log" && break
      sleep 0.1
    done
    kill -TERM "$pid"
    status=0
    wait "$pid" || status=$?
    if [[ $status -ne 0 ]]; then
      echo "FAILED: the worker exited with $status on SIGTERM"
      failures=$((failures + 1))
    fi
    expect "$work/worker.log" "stopped by signal 15"
    expect "$work/worker.log" "summary: received 0,"
    ;;
  *)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac

[[ $failures -eq 0 ]] && echo "examples.$scenario: passed" || echo "examples.$scenario: $failures check(s) FAILED"
[[ $failures -eq 0 ]]
