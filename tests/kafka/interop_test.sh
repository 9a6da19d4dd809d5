#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Kafka interop with the published Python SDK (scripts/python-sdk): the same
# topics, both ways, bodies compared byte for byte; plus a Python-parked retry
# record re-injected by this SDK (the shared <topic>.retry.<n> naming).
#
#   interop_test.sh PATH/TO/babelqueue
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../support/check.sh
source "$root/tests/support/check.sh"
bq="$1"
url="$("$root/scripts/broker" url kafka | tail -n 1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run_id="$(date +%s)-$$"
py() { "$root/scripts/python-sdk" run "$here/interop_python.py" "$@"; }

# Python -> C++: five envelopes published by the Python SDK, drained by ours.
topic="interop-py-$run_id"
py publish "$url" "$topic" 5 "$work/py.out"
"$bq" --url "$url?group=interop-$run_id" drain "$topic" --max 5 --wait 20 >"$work/cpp.out"
check "python->cpp count" 5 "$(wc -l <"$work/cpp.out")"
check "python->cpp bytes" "$(sort "$work/py.out")" "$(sort "$work/cpp.out")"

# C++ -> Python: envelopes (with a traceparent) published by ours, consumed by
# the Python SDK; the bodies it got are the bytes on the topic.
topic="interop-cpp-$run_id"
traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
"$bq" --url "$url" publish "$topic" urn:interop:kafka:cpp '{"n":1,"text":"héllo 中文"}' --count 3 \
  --header "traceparent=$traceparent" >"$work/ids.out"
py consume "$url" "interop-py-$run_id" "$topic" 3 "$work/pyc.out"
check "cpp->python count" 3 "$(wc -l <"$work/pyc.out")"
"$bq" --url "$url?group=interop-raw-$run_id" drain "$topic" --max 3 --wait 20 >"$work/raw.out"
check "cpp->python bytes" "$(sort "$work/raw.out")" "$(cut -f1 "$work/pyc.out" | sort)"
headers="$(head -n 1 "$work/pyc.out" | cut -f2)"
contains "cpp->python traceparent header" "\"traceparent\": \"$traceparent\"" "$headers"
contains "cpp->python bq-job header" '"bq-job": "urn:interop:kafka:cpp"' "$headers"
contains "cpp->python bq-source-lang header" '"bq-source-lang": "cpp"' "$headers"
contains "cpp->python bq-attempts header" '"bq-attempts": "0"' "$headers"
for id in $(cat "$work/ids.out"); do contains "cpp->python id $id" "$id" "$(cat "$work/pyc.out")"; done

# A record the Python SDK parked on its retry tier 1 (1000 ms) comes back to
# the topic through our re-injection, not before it is due.
topic="interop-delay-$run_id"
py publish-delayed "$url" "$topic" 1000 "$work/delayed.out"
"$bq" --url "$url?group=interop-delay-$run_id&retry_tiers=1s" drain "$topic" --max 1 --wait 20 >"$work/reinjected.out"
received_ms="$(date +%s%3N)"
check "python retry tier -> cpp re-injection bytes" "$(cat "$work/delayed.out")" "$(cat "$work/reinjected.out")"
created_ms="$(grep -o '"created_at":[0-9]*' "$work/delayed.out" | cut -d: -f2)"
check "re-injected no earlier than its tier" 1 "$(( received_ms - created_ms >= 1000 ? 1 : 0 ))"
finish
