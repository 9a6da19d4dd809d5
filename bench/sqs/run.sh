#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the SQS benchmark against the local SQS-compatible server of
# scripts/broker (started when it is not running).
#   bench/sqs/run.sh [--markdown] BUILD_DIR/bench/sqs/babelqueue_bench_sqs [--messages N] [--rounds R]
# --markdown prints the report as a block for the docs: a line saying when, on
# which commit and on what machine it ran, then the report
# (bench/with_machine.py; bench/regenerate_docs.py puts it in place).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../support/markdown_mode.sh
source "$root/bench/support/markdown_mode.sh"
markdown_mode "$root/bench/sqs/run.sh" "$@"
bench="$1"
shift
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-AKIDBABELQUEUETEST}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-babelqueue-test-secret}"
"$root/scripts/broker" status sqs >/dev/null 2>&1 || "$root/scripts/broker" start sqs >/dev/null
url="$("$root/scripts/broker" url sqs | tail -n 1)"
exec "$bench" --url "$url" "$@"
