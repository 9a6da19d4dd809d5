#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of the Service Bus benchmark: a small run prints every figure
# and every ratio. (Targets are judged on the full-size run, not here.)
#   bench_smoke_test.sh SOURCE_DIR BENCH
set -uo pipefail
# shellcheck source=../support/check.sh
source "$1/tests/support/check.sh"
out="$("$1/bench/servicebus/run.sh" "$2" --messages 500 --batch 100 --rounds 1 2>&1)"
echo "$out"
for figure in "raw proton publish (batched, unsettled)" "SDK publish_batch" \
  "raw proton receive+complete, 1 receiver" "SDK receive+ack_batch, concurrency 1" \
  "SDK Worker consume+complete, concurrency 1" "raw proton receive+complete, 4 receivers" \
  "SDK receive+ack_batch, concurrency 4" "SDK Worker consume+complete, concurrency 4" \
  "SDK / raw publish" "SDK / raw consume+complete, concurrency 1" \
  "SDK Worker / raw consume+complete, concurrency 1" "SDK / raw consume+complete, concurrency 4" \
  "SDK Worker / raw consume+complete, concurrency 4"; do
  contains "prints: $figure" "$figure" "$out"
done
finish
