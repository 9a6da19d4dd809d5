#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of the Artemis benchmark: a small run, the published Python SDK
# side by side, prints every figure and every ratio. (Targets are judged on
# the full-size run, not here.)
#   bench_smoke_test.sh SOURCE_DIR BENCH
set -uo pipefail
# shellcheck source=../support/check.sh
source "$1/tests/support/check.sh"
out="$("$1/bench/artemis/run.sh" "$2" --messages 1000 --batch 100 --rounds 1 --python-messages 100 --step-timeout 60 2>&1)"
echo "$out"
for figure in "raw proton publish (batched, unsettled)" "SDK publish_batch" "raw proton receive+accept, 1 receiver" \
  "SDK receive+ack, concurrency 1" "SDK Worker consume+ack, concurrency 1" "raw proton receive+accept, 4 receivers" \
  "SDK receive+ack, concurrency 4" "SDK Worker consume+ack, concurrency 4" \
  "SDK receive+ack, concurrency 4, one connection" "Python SDK publish (one by one)" \
  "SDK publish (one by one)" "raw proton publish (one by one)" "Python SDK pop+ack" \
  "SDK / raw publish" "SDK / raw consume+ack, concurrency 1" "SDK Worker / raw consume+ack, concurrency 1" \
  "SDK / raw consume+ack, concurrency 4" "SDK Worker / raw consume+ack, concurrency 4" \
  "SDK publish_batch / Python SDK publish" "SDK receive+ack c1 / Python SDK pop+ack" \
  "SDK Worker c1 / Python SDK pop+ack"; do
  contains "prints: $figure" "$figure" "$out"
done
finish
