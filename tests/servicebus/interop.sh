#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Interop with the published Python SDK (babelqueue[azureservicebus], pinned,
# in the venv scripts/python-sdk creates) on the Service Bus test server, the
# credentials in AZURE_SERVICEBUS_CONNECTION_STRING for both sides:
#   1. Python publishes; this SDK consumes: bodies identical byte for byte, no
#      contract property surfaced as a header, attempts 0.
#   2. This SDK publishes; Microsoft's client peeks each message and finds the
#      Python SDK's own projection of its body (Data section, subject,
#      correlation-id, message-id, content-type, typed bq- properties, the
#      traceparent header); the Python runtime handles each once.
#   3. A Python-produced message abandoned by this SDK, then retried by its
#      Worker and dead-lettered to <queue>.dlq, whose record the Python SDK
#      reads.
#   4. A message of this SDK retried by the Python runtime (it republishes):
#      failed twice, handled the third time; and a retry copy the Python
#      runtime left is read by this SDK as the original with attempts 1.
#   5. The attempts each SDK reads after native abandons: the Python SDK one
#      lower than the binding's DeliveryCount - 1, which this SDK reads.
# Usage: interop.sh PATH_OF_servicebus_interop_peer
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peer="$1"
# shellcheck source=tests/support/check.sh
source "$root/tests/support/check.sh"
url="$("$root/scripts/broker" url servicebus | tail -n 1)"
AZURE_SERVICEBUS_CONNECTION_STRING="$("$root/scripts/broker" info servicebus | sed -n 's/^connection_string=//p')"
export AZURE_SERVICEBUS_CONNECTION_STRING
work="$(mktemp -d "${TMPDIR:-/tmp}/bq-servicebus-interop-XXXXXX")"
trap 'rm -rf "$work"' EXIT
suffix="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
count=25
py() { "$root/scripts/python-sdk" run "$here/interop.py" "$@" 2>&1; }
# Runs a command, printing "ok" or its output (for check).
outcome() { local out; if out="$("$@" 2>&1)"; then echo ok; else echo "$out"; fi; }

# 1. Python -> C++
q="interop-py-to-cpp-$suffix"
check "python publishes $count" ok "$(outcome py produce "$url" "$q" "$count" urn:interop:py "$work/py-sent.jsonl")"
check "c++ consumes $count" ok "$(outcome "$peer" consume "$url" "$q" "$count" "$work/cpp-received.jsonl")"
check "python -> c++: bodies identical, no header, attempts 0" "$count bodies identical byte for byte" \
  "$(py compare "$work/py-sent.jsonl" "$work/cpp-received.jsonl")"
check "python -> c++: nothing left" ok "$(outcome "$peer" empty "$url" "$q" 2)"

# 2. C++ -> Python
q="interop-cpp-to-py-$suffix"
check "c++ publishes $count" ok "$(outcome "$peer" produce "$url" "$q" "$count" "$work/cpp-sent.jsonl")"
check "c++ -> python: every field as the Python SDK projects it" "$count messages carry the Python projection" \
  "$(py inspect "$url" "$q" "$count" "$work/py-inspected.jsonl")"
check "c++ -> python: bodies identical" "$count bodies identical byte for byte" \
  "$(py compare "$work/cpp-sent.jsonl" "$work/py-inspected.jsonl")"
check "c++ -> python: the Python runtime handles each once" "the Python runtime handled $count messages" \
  "$(py handle "$url" "$q" "$count")"
check "c++ -> python: nothing left" ok "$(outcome "$peer" empty "$url" "$q" 2)"

# 3. A Python message retried and dead-lettered by this SDK
q="interop-py-retried-$suffix"
check "python publishes one to fail" ok \
  "$(outcome py produce "$url" "$q" 1 urn:interop:py:fail "$work/py-fail.jsonl")"
check "c++ abandons it, then its Worker retries and dead-letters it" ok \
  "$(outcome "$peer" retry "$url" "$q" "$work/cpp-retry.jsonl")"
check "python reads the c++ dead-letter record" "the Python SDK reads the C++ dead-letter record" \
  "$(py dead-letter "$url" "$q" "$work/py-fail.jsonl" "$work/cpp-retry.jsonl")"
check "nothing left on $q" ok "$(outcome "$peer" empty "$url" "$q" 2)"

# 4. A C++ message retried by the Python runtime
q="interop-cpp-retried-$suffix"
check "c++ publishes one flaky message" ok "$(outcome "$peer" produce "$url" "$q" 1 "$work/cpp-flaky.jsonl")"
check "the Python runtime fails it twice and handles it the third time" "attempts 0 1 2" \
  "$(py flaky "$url" "$q" 2 "$work/py-flaky.jsonl")"
check "nothing left on $q" ok "$(outcome "$peer" empty "$url" "$q" 2)"
q="interop-cpp-retry-copy-$suffix"
check "c++ publishes one" ok "$(outcome "$peer" produce "$url" "$q" 1 "$work/cpp-once.jsonl")"
check "the Python runtime fails it once" ok "$(outcome py fail-once "$url" "$q")"
check "c++ consumes the Python retry copy" ok "$(outcome "$peer" consume "$url" "$q" 1 "$work/cpp-copy.jsonl")"
check "the Python retry copy is the original with attempts 1" "the retry copy is the original with attempts 1" \
  "$(py compare-retry "$work/cpp-once.jsonl" "$work/cpp-copy.jsonl")"

# 5. Attempts after native abandons: the Python SDK subtracts 1 from the
# header, which holds DeliveryCount - 1 already, so it reads one attempt low;
# this SDK reads the binding's DeliveryCount - 1.
q="interop-abandons-$suffix"
check "python publishes one" ok "$(outcome py produce "$url" "$q" 1 urn:interop:py "$work/py-abandon.jsonl")"
check "the Python SDK reads one attempt low after 0, 1, 2 abandons" \
  "header delivery-count [0, 1, 2], the Python SDK reads attempts [0, 0, 1]" "$(py abandons "$url" "$q" 3)"
check "c++ consumes it after 3 abandons" ok "$(outcome "$peer" consume "$url" "$q" 1 "$work/cpp-abandoned.jsonl")"
check "c++ reads attempts 3 (DeliveryCount 4 - 1)" '"native_attempts":3,"attempts":3' \
  "$(grep -o '"native_attempts":[0-9]*,"attempts":[0-9]*' "$work/cpp-abandoned.jsonl")"
finish
