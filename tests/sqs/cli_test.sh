#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CLI on SQS, where the dead-letter queue of QUEUE is QUEUE-dlq (a dot is
# not allowed in a name): the family's QUEUE.dlq is accepted by every command
# and mapped; `work`'s default dead-letter queue is QUEUE-dlq; and `peek`
# says plainly that SQS cannot browse, taking nothing.
#   cli_test.sh BABELQUEUE
set -uo pipefail
bq="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../support/check.sh
source "$root/tests/support/check.sh"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-AKIDBABELQUEUETEST}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-babelqueue-test-secret}"
url="$("$root/scripts/broker" url sqs | tail -n 1)"
export BABELQUEUE_URL="$url&create=1"
queue="bq-cli-$RANDOM$RANDOM"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# A message that always fails lands in QUEUE-dlq.
id="$("$bq" publish "$queue" urn:cli:test:fails '{"n":1}')"
"$bq" work "$queue" --dead-letter --max-attempts 1 --idle-exit 2 -- sh -c 'exit 7' 2>"$tmp/work.err"
check "work exits 0 at idle" 0 $?
contains "work dead-lettered it" "dead-lettered 1" "$(cat "$tmp/work.err")"
check "stats QUEUE.dlq is QUEUE-dlq" "{\"queue\":\"$queue-dlq\",\"ready\":1,\"reserved\":0,\"delayed\":0}" \
  "$("$bq" stats "$queue.dlq" --json 2>&1)"
check "stats QUEUE-dlq, the native name" "{\"queue\":\"$queue-dlq\",\"ready\":1,\"reserved\":0,\"delayed\":0}" \
  "$("$bq" stats "$queue-dlq" --json 2>&1)"

err="$("$bq" peek "$queue.dlq" 2>&1)"
check "peek: SQS cannot browse, exit 1" 1 $?
contains "peek says so" "SQS cannot show the messages of queue '$queue-dlq' without receiving them" "$err"
contains "peek says it took nothing" "nothing was taken" "$err"
check "peek took nothing" "{\"queue\":\"$queue-dlq\",\"ready\":1,\"reserved\":0,\"delayed\":0}" \
  "$("$bq" stats "$queue.dlq" --json 2>&1)"

out="$("$bq" redrive "$queue.dlq" --wait 2 2>&1)"
check "redrive QUEUE.dlq exits 0" 0 $?
contains "redrive QUEUE.dlq moved it back" "redriven $id urn:cli:test:fails -> $queue" "$out"

# --dlq in the family's spelling.
"$bq" work "$queue" --dlq "$queue.dlq" --max-attempts 1 --idle-exit 2 -- sh -c 'exit 7' 2>"$tmp/work.err"
check "work --dlq QUEUE.dlq exits 0" 0 $?
again="$("$bq" drain "$queue-dlq" --wait 2 --max 1 2>&1)"
contains "work --dlq QUEUE.dlq dead-lettered to QUEUE-dlq" "\"id\":\"$id\"" "$again"
finish
