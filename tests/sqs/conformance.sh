#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The conformance suite's sqs block through the CLI, with the live server for
# the attributes read back. Usage: conformance.sh BABELQUEUE_CLI SUITE_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-AKIDBABELQUEUETEST}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-babelqueue-test-secret}"
url="$("$root/scripts/broker" url sqs | tail -n 1)"
out="$("$1" conformance "$2" --url "$url")"
echo "$out"
# Every sqs check ran and passed (none skipped).
sqs_lines="$(grep -c ' sqs/' <<<"$out" || true)"
sqs_passed="$(grep -c '^PASS sqs/' <<<"$out" || true)"
[[ "$sqs_lines" -ge 8 && "$sqs_lines" == "$sqs_passed" ]]
