#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of the RabbitMQ benchmark: a small run prints every figure and
# every ratio. (Targets are judged on the full-size run, not here.)
#   bench_smoke_test.sh SOURCE_DIR BENCH
set -uo pipefail
# shellcheck source=../support/check.sh
source "$1/tests/support/check.sh"
url="$("$1/scripts/broker" url rabbitmq | tail -n 1)"
out="$("$2" --url "$url" --messages 1000 --batch 50 --rounds 1 2>&1)"
echo "$out"
for figure in "raw confirmed publish" "SDK confirmed publish" "raw basic.consume+ack, 1 consumer" \
  "SDK receive+ack, concurrency 1" "raw basic.consume+ack, 4 consumers" "SDK receive+ack, concurrency 4" \
  "raw basic.get+ack" "SDK / raw confirmed publish" "SDK / raw consume+ack, concurrency 1" \
  "SDK / raw consume+ack, concurrency 4" "SDK consume+ack c4 / raw basic.get+ack"; do
  contains "prints: $figure" "$figure" "$out"
done
finish
