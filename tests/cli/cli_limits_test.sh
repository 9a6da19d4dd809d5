#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The queue commands with every number at the end of its range: durations
# of 1e300 seconds, a delay of the largest int64 milliseconds, a body whose
# attempts is the largest int64. Nothing overflows (this script runs under
# UBSan too), the worker gives such a message up, and "for ever" means for
# ever, not a wrapped-around negative time.
set -u
bq="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
# shellcheck source=../support/check.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/check.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BABELQUEUE_URL="sqlite://$tmp/q.db"

# A delay of the largest int64 milliseconds: delayed for ever.
"$bq" publish later urn:a '{}' --delay 9223372036854775807 >/dev/null
check "--delay at the top: accepted" 0 $?
check "--delay at the top: delayed" '{"queue":"later","ready":0,"reserved":0,"delayed":1}' "$("$bq" stats later --json)"

# A body at the top of the attempts range, failing: dead-lettered once.
top='{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1,"id":"m-top","queue":"top"},"attempts":9223372036854775807}'
printf '%s' "$top" | "$bq" send top
printf '#!/bin/sh\necho run >>"%s/runs.log"\nexit 3\n' "$tmp" >"$tmp/fail.sh"
chmod +x "$tmp/fail.sh"
# The CLI takes decimals without an exponent: 1e300 written out.
huge="1$(printf '%0300d' 0)"
"$bq" work top --max-messages 1 --dead-letter --idle-exit "$huge" --unreachable-exit "$huge" \
  --shutdown-deadline "$huge" --kill-grace "$huge" --backoff-initial 1 --backoff-max 9223372036854775807 \
  --backoff-multiplier 1000 -- "$tmp/fail.sh" 2>"$tmp/work.err"
check "work with every duration at its largest: exit 0" 0 $?
check "the command ran once" "run" "$(cat "$tmp/runs.log")"
contains "dead-lettered, not retried" "retried 0, dead-lettered 1" "$(cat "$tmp/work.err")"
check "nothing left in the queue" '{"queue":"top","ready":0,"reserved":0,"delayed":0}' "$("$bq" stats top --json)"
contains "the dead letter keeps the count" '"attempts":9223372036854775807' "$("$bq" drain top.dlq --wait 0.2)"

# --prefetch-bytes: with a byte bound below one body the worker holds at most
# one message ahead of the command, so while the first of four 100 KB
# messages runs, two or more are still ready at the broker; without a bound
# (0) one receive reserves all four.
pad=$(head -c 100000 /dev/zero | tr '\0' x)
printf '#!/bin/sh\n"%s" --url "%s" stats big --json >>"%s/stats.log"\n' "$bq" "$BABELQUEUE_URL" "$tmp" >"$tmp/stats.sh"
chmod +x "$tmp/stats.sh"
for round in bounded unbounded; do
  for _ in 1 2 3 4; do "$bq" publish big urn:a "{\"pad\":\"$pad\"}" >/dev/null; done
  rm -f "$tmp/stats.log"
  bytes=1
  [[ $round == unbounded ]] && bytes=0
  "$bq" work big --max-messages 4 --prefetch-bytes "$bytes" -- "$tmp/stats.sh" 2>/dev/null
  check "--prefetch-bytes $bytes: the four ran" 4 "$(wc -l <"$tmp/stats.log")"
  first=$(head -n 1 "$tmp/stats.log")
  if [[ $round == bounded ]]; then
    contains "--prefetch-bytes 1: messages wait at the broker" '"ready":2' "${first/\"ready\":3/\"ready\":2}"
  else
    contains "--prefetch-bytes 0: all four prefetched" '"ready":0,"reserved":4' "$first"
  fi
done
"$bq" work big --prefetch 1000001 -- true 2>/dev/null
check "--prefetch above its range: a usage error" 2 $?

finish
