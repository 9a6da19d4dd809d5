#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `babelqueue work --idempotency`: several worker processes on one SQLite
# queue and one SQLite idempotency store.
#   1. Two copies of one message (one meta.id) handled by two processes at
#      once, the second one looking after the claim's lease would have run
#      out (the lease is shorter than the handler): with the claim the
#      command runs once; with --no-claim (the family's seen-set) twice.
#   2. kill -9 of a worker in the middle of its command: its claim is taken
#      over by another worker once the lease has passed, and the message runs
#      to completion there.
#   3. A redelivery of a handled id is acked without running the command.
#   4. `babelqueue conformance SUITE_DIR` runs the idempotency sequences on
#      the memory and SQLite stores and the payload_schema cases, and skips
#      neither section.
#   cli_idempotency_test.sh BABELQUEUE_CLI SUITE_DIR
set -u
bq="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
# shellcheck source=../support/check.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/check.sh"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
unset BABELQUEUE_URL

now_ms() { date +%s%3N; }
cat >"$tmp/slow.sh" <<EOF
#!/bin/sh
# Records each start (id, pid, time), then works for 2 s.
echo "start \$BQ_MESSAGE_ID \$\$ \$(date +%s%3N)" >>"$tmp/runs.log"
sleep 2
echo "end \$BQ_MESSAGE_ID \$\$" >>"$tmp/runs.log"
EOF
chmod +x "$tmp/slow.sh"

wait_for_start() {  # until runs.log has N start lines, at most 10 s
  for _ in $(seq 100); do
    [[ $(grep -c '^start' "$tmp/runs.log" 2>/dev/null) -ge $1 ]] && return 0
    sleep 0.1
  done
  return 1
}
starts() { grep -c '^start' "$tmp/runs.log" 2>/dev/null || true; }

# ---- 1. two processes, one meta.id, claim lease (0.6 s) shorter than the handler (2 s) -----------
two_workers() {  # two_workers STORE_URL [work options...] -> the number of runs
  local store="$1"
  shift
  rm -f "$tmp/runs.log"
  export BABELQUEUE_URL="sqlite://$tmp/q-$RANDOM$RANDOM.db"
  local body
  body=$("$bq" codec encode urn:babel:payments:charge '{"order_id":7}' --queue pay)
  printf '%s' "$body" | "$bq" send pay
  printf '%s' "$body" | "$bq" send pay  # a second copy: the same meta.id
  # Each worker takes one message (--max-messages 1), so each gets a copy.
  "$bq" work pay --max-messages 1 --idempotency "$store" --claim-lease 0.6 "$@" -- "$tmp/slow.sh" 2>>"$tmp/work.err" &
  local first=$!
  wait_for_start 1
  sleep 1.2  # twice the lease: without renewal the claim would have run out
  "$bq" work pay --max-messages 1 --idempotency "$store" --claim-lease 0.6 "$@" -- "$tmp/slow.sh" 2>>"$tmp/work.err" &
  local second=$!
  wait "$first" "$second"
  # Whatever the second worker handed back is delivered once more.
  "$bq" work pay --idle-exit 1 --idempotency "$store" --claim-lease 0.6 "$@" -- "$tmp/slow.sh" 2>>"$tmp/work.err"
  printf '%s|%s' "$(starts)" "$("$bq" stats pay --json)"
}

check "with the claim: one run, the copy acked" '1|{"queue":"pay","ready":0,"reserved":0,"delayed":0}' \
  "$(two_workers "sqlite://$tmp/seen-claim.db")"
check "without the claim (--no-claim): both copies run" '2|{"queue":"pay","ready":0,"reserved":0,"delayed":0}' \
  "$(two_workers "sqlite://$tmp/seen-noclaim.db" --no-claim)"

# ---- 2. kill -9 mid-handler: the claim is taken over after its lease ---------------------------
rm -f "$tmp/runs.log"
export BABELQUEUE_URL="sqlite://$tmp/crash.db?visibility_timeout=1"
body=$("$bq" codec encode urn:babel:payments:charge '{"order_id":8}' --queue pay)
id=$(printf '%s' "$body" | sed -E 's/.*"meta":\{"id":"([^"]+)".*/\1/')
printf '%s' "$body" | "$bq" send pay
store="sqlite://$tmp/seen-crash.db"
"$bq" work pay --idempotency "$store" --claim-lease 1.5 -- "$tmp/slow.sh" 2>>"$tmp/work.err" &
victim=$!
pids+=("$victim")
wait_for_start 1
killed_at=$(now_ms)
kill -9 "$victim"
wait "$victim" 2>/dev/null
"$bq" work pay --idle-exit 2.5 --idempotency "$store" --claim-lease 1.5 -- "$tmp/slow.sh" 2>>"$tmp/work.err"
check "the survivor exits 0" 0 $?
check "the message ran twice: the killed run, then the takeover" 2 "$(starts)"
first_pid=$(grep '^start' "$tmp/runs.log" | sed -n 1p | cut -d' ' -f3)
second=$(grep '^start' "$tmp/runs.log" | sed -n 2p)
check "the takeover is another process" 1 "$([[ "$(cut -d' ' -f3 <<<"$second")" != "$first_pid" ]] && echo 1)"
waited=$(($(cut -d' ' -f4 <<<"$second") - killed_at))
# The claim was last renewed at most a third of its lease before the kill,
# so it ran out 1.0 to 1.5 s after it; the queue's own lease (1 s) alone
# would have let it run after 1 s.
check "the takeover waited for the claim's lease (waited ${waited} ms)" 1 "$((waited >= 900 ? 1 : 0))"
contains "the takeover ran to its end" "end $id" "$(cat "$tmp/runs.log")"
check "nothing left in the queue" '{"queue":"pay","ready":0,"reserved":0,"delayed":0}' "$("$bq" stats pay --json)"

# ---- 3. a redelivery of a handled id is acked without running ----------------------------------
printf '%s' "$body" | "$bq" send pay
"$bq" work pay --idle-exit 0.5 --idempotency "$store" -- "$tmp/slow.sh" 2>>"$tmp/work.err"
check "a handled id runs no more" 2 "$(starts)"
check "and is acked" '{"queue":"pay","ready":0,"reserved":0,"delayed":0}' "$("$bq" stats pay --json)"

# ---- 4. the conformance sections ----------------------------------------------------------------
out=$("$bq" conformance "$2" 2>&1)
check "conformance exits 0" 0 $?
contains "idempotency on the memory store, with the claim" "PASS idempotency.memory.claim.throw-leaves-id-unmarked" "$out"
contains "idempotency on a SQLite file" "PASS idempotency.sqlite.forget-allows-rerun" "$out"
contains "payload_schema" "PASS payload_schema.invalid-below-minimum" "$out"
check "neither section skipped" "" "$(grep -E '^SKIP (idempotency|payload_schema)' <<<"$out" | grep -v 'needs --url')"
contains "nothing failed" " 0 failed" "$out"

# ---- usage ---------------------------------------------------------------------------------------
"$bq" work pay --idempotency "nosuch://x" -- "$tmp/slow.sh" 2>"$tmp/usage.err"
check "an unknown store scheme fails" 1 $?
contains "and says which schemes there are" "memory://" "$(cat "$tmp/usage.err")"

if [[ $failed -ne 0 ]]; then
  echo "--- runs.log"; cat "$tmp/runs.log"; echo "--- work.err"; cat "$tmp/work.err"
fi
finish
