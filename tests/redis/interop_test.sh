#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Interoperability with the published Python SDK (pinned babelqueue[redis] in
# the virtual environment scripts/python-sdk creates), on the real Redis:
#   1. Python publishes (bare and with a traceparent frame); this SDK consumes:
#      bodies and headers identical, and this SDK re-encodes each body to the
#      same bytes.
#   2. This SDK publishes; the Python SDK pops, re-encodes to the same bytes,
#      dispatches to its handler (with the headers) and acks.
#   3. A Python worker dies holding a reservation in <queue>:processing: this
#      SDK's recovery, running well past its visibility timeout, never takes it.
#   interop_test.sh SOURCE_DIR INTEROP_PEER
set -uo pipefail
src="$1"
peer="$2"
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../support/check.sh
source "$src/tests/support/check.sh"

url="$("$src/scripts/broker" url redis | tail -n 1)"
port="$("$src/scripts/broker" info redis | sed -n 's/^port=//p')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python_sdk() { "$src/scripts/python-sdk" run "$here/python_interop.py" "$@"; }
redis() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
suffix="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
count=20

# Compares two JSON-lines files as multisets of (body, headers); every line of
# the consumer's file must also say "reencoded" (and "handled" when present).
compare() {  # compare PRODUCED CONSUMED
  python3 - "$1" "$2" <<'PY'
import json, sys
def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
produced, consumed = load(sys.argv[1]), load(sys.argv[2])
key = lambda l: (l["body"].encode("utf-8"), sorted(l["headers"].items()))
problems = []
if sorted(map(key, produced)) != sorted(map(key, consumed)):
    problems.append("bodies or headers differ")
if not all(l.get("reencoded") for l in consumed):
    problems.append("a body did not re-encode to the same bytes")
if not all(l.get("handled", True) for l in consumed):
    problems.append("a message did not reach its handler")
framed = sum(1 for l in consumed if l["headers"].get("traceparent"))
print("; ".join(problems) if problems else f"identical ({len(consumed)} messages, {framed} with a traceparent)")
PY
}

# 1. Python -> C++
q1="interop-python-to-cpp-$suffix"
python_sdk produce "$url" "$q1" "$count" "$work/python-produced.jsonl"
check "the Python SDK published" 0 $?
"$peer" consume "$url" "$q1" "$count" "$work/cpp-consumed.jsonl"
check "this SDK consumed every Python message" 0 $?
check "Python -> C++ bodies byte for byte" "identical ($count messages, $((count / 2)) with a traceparent)" \
  "$(compare "$work/python-produced.jsonl" "$work/cpp-consumed.jsonl")"
check "nothing left on $q1" "0 0" "$(redis llen "$q1") $(redis zcard "$q1:bq:leases")"

# 2. C++ -> Python
q2="interop-cpp-to-python-$suffix"
"$peer" publish "$url" "$q2" "$count" "$work/cpp-produced.jsonl"
check "this SDK published" 0 $?
python_sdk consume "$url" "$q2" "$count" "$work/python-consumed.jsonl"
check "the Python SDK consumed and acked every message" 0 $?
check "C++ -> Python bodies byte for byte" "identical ($count messages, $((count / 2)) with a traceparent)" \
  "$(compare "$work/cpp-produced.jsonl" "$work/python-consumed.jsonl")"
check "nothing left on $q2" "0 0" "$(redis llen "$q2") $(redis llen "$q2:processing")"

# 3. A dead Python worker's reservation is never taken by this SDK's recovery.
q3="interop-python-held-$suffix"
python_sdk produce "$url" "$q3" 3 "$work/held-produced.jsonl"
python_sdk hold "$url" "$q3"
check "the Python worker reserved a message" 0 $?
held="$(redis lrange "$q3:processing" 0 -1)"
"$peer" consume "$url?visibility_timeout=1" "$q3" 3 "$work/held-consumed.jsonl" 4
check "this SDK got only the two free messages in 4 s (visibility timeout 1 s)" 1 $?
check "two consumed" 2 "$(wc -l <"$work/held-consumed.jsonl" | tr -d ' ')"
check "the Python reservation is still in $q3:processing" "$held" "$(redis lrange "$q3:processing" 0 -1)"
redis del "$q1" "$q2" "$q3" "$q3:processing" "$q3:processing:deadlines" >/dev/null

finish
