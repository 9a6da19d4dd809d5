#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pulsar interop with the published Python SDK (babelqueue[pulsar], through
# scripts/python-sdk) on the real broker, both ways, bodies compared byte for
# byte; batched, compressed messages from pulsar-client's own producer; a
# retry and a dead letter crossing languages each way. The Python SDK
# subscribes lazily at the latest position: its subscription is created
# before anything is published for it.
#
#   interop_test.sh PATH/TO/babelqueue
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../support/check.sh
source "$root/tests/support/check.sh"
bq="$1"
url="$("$root/scripts/broker" url pulsar | tail -n 1)"
admin="$("$root/scripts/broker" info pulsar | sed -n 's/^admin_url=//p')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run_id="$(date +%s)-$$"
# libpulsar logs every connection: kept in a file, shown on failure.
py() {
  "$root/scripts/python-sdk" run "$here/interop_python.py" "$@" >>"$work/python.log" 2>&1 ||
    { tail -n 40 "$work/python.log" >&2; return 1; }
}

# Python -> C++: five envelopes published by the Python SDK, drained by ours.
queue="interop-py-$run_id"
py publish "$url" "$queue" 5 "$work/py.out"
"$bq" --url "$url" drain "$queue" --max 5 --wait 20 >"$work/cpp.out"
check "python->cpp count" 5 "$(wc -l <"$work/cpp.out")"
check "python->cpp bytes" "$(sort "$work/py.out")" "$(sort "$work/cpp.out")"

# C++ -> Python: envelopes with a traceparent, consumed by the Python SDK.
queue="interop-cpp-$run_id"
traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
py subscribe "$url" "$queue"
"$bq" --url "$url" publish "$queue" urn:interop:pulsar:cpp '{"n":1,"text":"héllo 中文"}' --count 3 \
  --header "traceparent=$traceparent" >"$work/ids.out"
py consume "$url" "$queue" 3 "$work/pyc.out"
check "cpp->python count" 3 "$(wc -l <"$work/pyc.out")"
properties="$(head -n 1 "$work/pyc.out" | cut -f2)"
contains "cpp->python traceparent property" "\"traceparent\": \"$traceparent\"" "$properties"
contains "cpp->python bq-job property" '"bq-job": "urn:interop:pulsar:cpp"' "$properties"
contains "cpp->python bq-source-lang property" '"bq-source-lang": "cpp"' "$properties"
contains "cpp->python bq-attempts property" '"bq-attempts": "0"' "$properties"
contains "cpp->python bq-schema-version property" '"bq-schema-version": "1"' "$properties"
for id in $(cat "$work/ids.out"); do contains "cpp->python id $id" "\"id\":\"$id\"" "$(cut -f1 "$work/pyc.out")"; done

# Batched and compressed by pulsar-client (libpulsar): ten messages in one
# entry per codec, unpacked by ours.
for codec in LZ4 ZLib ZSTD SNAPPY; do
  queue="interop-batch-$codec-$run_id"
  py batch "$url" "$queue" 10 "$codec" "$work/batch.out"
  entries="$(curl -s --max-time 10 "$admin/admin/v2/persistent/public/default/$queue/internalStats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["numberOfEntries"])')"
  check "batch $codec: ten messages in one entry" 1 "$entries"
  "$bq" --url "$url" drain "$queue" --max 10 --wait 20 >"$work/batch-cpp.out"
  check "batch $codec: every message, byte for byte" "$(sort "$work/batch.out")" "$(sort "$work/batch-cpp.out")"
done

# A retry crossing languages: the Python runtime fails once and republishes
# with attempts 1; our worker handles it and sees attempts 1.
queue="interop-retry-$run_id"
py subscribe "$url" "$queue"
"$bq" --url "$url" publish "$queue" urn:interop:pulsar:fails '{"n":3}' >/dev/null
py work-fail "$url" "$queue" 5 1
printf '#!/bin/sh\necho "$BQ_ATTEMPTS" >>"%s/ok.log"\n' "$work" >"$work/ok.sh"
chmod +x "$work/ok.sh"
"$bq" --url "$url" work "$queue" --idle-exit 3 -- "$work/ok.sh" 2>"$work/work-ok.err"
check "python retry -> cpp handler sees attempts 1" 1 "$(cat "$work/ok.log")"

# A dead letter crossing languages, Python -> C++: the Python runtime
# exhausts its attempts and dead-letters to <queue>.dlq, which ours drains.
queue="interop-pydlq-$run_id"
py subscribe "$url" "$queue"
id="$("$bq" --url "$url" publish "$queue" urn:interop:pulsar:fails '{"n":4}')"
py work-fail "$url" "$queue" 3 3
dead="$("$bq" --url "$url" drain "$queue.dlq" --max 1 --wait 20)"
contains "python dead letter read by cpp: the id" "\"id\":\"$id\"" "$dead"
contains "python dead letter read by cpp: the queue" "\"original_queue\":\"$queue\"" "$dead"
contains "python dead letter read by cpp: by python" '"lang":"python"' "$dead"

# And C++ -> Python: ours dead-letters, the Python SDK reads <queue>.dlq.
queue="interop-cppdlq-$run_id"
py subscribe "$url" "$queue.dlq"
printf '#!/bin/sh\nexit 7\n' >"$work/fail.sh"
chmod +x "$work/fail.sh"
py publish "$url" "$queue" 1 "$work/dlq-src.out" # urn:interop:pulsar:python: no handler in ours either
"$bq" --url "$url" work "$queue" --dead-letter --max-attempts 3 --backoff-initial 50 --idle-exit 3 -- \
  "$work/fail.sh" 2>"$work/work-fail.err"
py consume "$url" "$queue.dlq" 1 "$work/pydlq.out"
dead="$(cut -f1 "$work/pydlq.out")"
contains "cpp dead letter read by python: the queue" "\"original_queue\":\"$queue\"" "$dead"
contains "cpp dead letter read by python: by cpp" '"lang":"cpp"' "$dead"
contains "cpp dead letter read by python: attempts 3" '"attempts":3' "$dead"
finish
