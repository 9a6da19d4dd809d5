#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Interop with the published Python SDK (babelqueue[sqs], pinned, in the venv
# scripts/python-sdk creates) on the real SQS-compatible server, both ways on
# one queue:
# Python publishes -> C++ consumes, C++ publishes -> Python consumes; bodies
# compared byte for byte, attributes checked against the Python projection.
# Usage: interop.sh PATH_OF_sqs_interop_peer
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peer="$1"
# shellcheck source=tests/support/check.sh
source "$root/tests/support/check.sh"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-AKIDBABELQUEUETEST}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-babelqueue-test-secret}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
url="$("$root/scripts/broker" url sqs | tail -n 1)"
work="$(mktemp -d "${TMPDIR:-/tmp}/bq-sqs-interop-XXXXXX")"
trap 'rm -rf "$work"' EXIT
suffix="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
count=25

# One queue, both directions in turn.
queue="interop-python-cpp-$suffix"
py_to_cpp="$queue"
"$root/scripts/python-sdk" run "$here/interop.py" produce "$url" "$py_to_cpp" "$count" "$work/py-sent.jsonl"
"$peer" consume "$url" "$py_to_cpp" "$count" "$work/cpp-received.jsonl"
result="$("$root/scripts/python-sdk" run "$here/interop.py" compare "$work/py-sent.jsonl" "$work/cpp-received.jsonl" 2>&1 || true)"
check "python -> c++: $count bodies identical, headers kept" "$count bodies identical byte for byte" "$result"

cpp_to_py="$queue"
"$peer" produce "$url&create=1" "$cpp_to_py" "$count" "$work/cpp-sent.jsonl"
if consumed="$("$root/scripts/python-sdk" run "$here/interop.py" consume "$url" "$cpp_to_py" "$count" \
  "$work/py-received.jsonl" 2>&1)"; then consumed=ok; fi
check "c++ -> python: attributes equal the Python projection, handled by the Python runtime" "ok" "$consumed"
result="$("$root/scripts/python-sdk" run "$here/interop.py" compare "$work/cpp-sent.jsonl" "$work/py-received.jsonl" 2>&1 || true)"
check "c++ -> python: $count bodies identical" "$count bodies identical byte for byte" "$result"
finish
