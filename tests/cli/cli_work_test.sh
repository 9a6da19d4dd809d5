#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `babelqueue work`: shell scripts turned into consumers, against temporary
# SQLite files. Retries, dead-lettering, poison, unknown URNs, the message's
# environment, --idle-exit, --max-messages, SIGTERM, and usage errors.
set -u
bq="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
# shellcheck source=../support/check.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/check.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset BABELQUEUE_URL
export BABELQUEUE_URL="sqlite://$tmp/q.db"
stats() { "$bq" stats "$1" --json; }
empty() { printf '{"queue":"%s","ready":0,"reserved":0,"delayed":0}' "$1"; }
drain() { "$bq" drain "$1" --wait 0.2; }
work() { "$bq" work "$@" 2>"$tmp/work.err"; }  # the worker's standard error in $tmp/work.err

# The consumers.
cat >"$tmp/record.sh" <<EOF
#!/bin/sh
# Records its input and environment, succeeds.
cat >"$tmp/stdin.\$BQ_MESSAGE_ID"
printf '%s|%s|%s|%s|%s|%s\n' "\$BQ_URN" "\$BQ_TRACE_ID" "\$BQ_MESSAGE_ID" "\$BQ_ATTEMPTS" "\$BQ_QUEUE" "\$BQ_HEADERS" >>"$tmp/env.log"
EOF
cat >"$tmp/flaky.sh" <<EOF
#!/bin/sh
# Fails on the first delivery only.
echo "\$BQ_ATTEMPTS" >>"$tmp/flaky.log"
if [ "\$BQ_ATTEMPTS" = 0 ]; then echo "first try fails" >&2; exit 3; fi
EOF
cat >"$tmp/fail.sh" <<EOF
#!/bin/sh
# Always fails, saying why on its standard error.
echo run >>"$tmp/fail.log"
echo "some noise" >&2
echo "boom: the database is down" >&2
exit 7
EOF
cat >"$tmp/slow.sh" <<EOF
#!/bin/sh
touch "$tmp/slow.started"
sleep 2
touch "$tmp/slow.done"
EOF
cat >"$tmp/never.sh" <<EOF
#!/bin/sh
touch "$tmp/never.ran"
EOF
chmod +x "$tmp"/*.sh

# ---- success: the body on stdin, the message's environment ------------------------------
body=$("$bq" codec encode urn:babel:orders:created '{"order_id":7}' --queue jobs --trace-id trace-7)
id=$(printf '%s' "$body" | sed -E 's/.*"meta":\{"id":"([^"]+)".*/\1/')
printf '%s' "$body" | "$bq" send jobs --header traceparent=00-abc-def-01 --header k=v
work jobs --idle-exit 0.3 -- "$tmp/record.sh"
check "work exits 0 at idle" 0 $?
check "stdin is the delivered body" "$body" "$(cat "$tmp/stdin.$id" 2>/dev/null)"
check "environment" "urn:babel:orders:created|trace-7|$id|0|jobs|{\"k\":\"v\",\"traceparent\":\"00-abc-def-01\"}" \
  "$(cat "$tmp/env.log")"
contains "summary line" "babelqueue: work jobs stopped (idle): processed 1, succeeded 1, failed 0, retried 0, dead-lettered 0, poison 0" \
  "$(cat "$tmp/work.err")"
check "acked" "$(empty jobs)" "$(stats jobs)"

"$bq" publish jobs urn:other '{}' --count 3 --header h=1 >/dev/null
work jobs --idle-exit 0.3 --concurrency 2 -- "$tmp/record.sh"
check "every URN goes to CMD" 3 "$(grep -c '^urn:other|' "$tmp/env.log")"
check "publish --header reaches the command" 3 "$(grep -c '|{"h":"1"}$' "$tmp/env.log")"
check "all acked" "$(empty jobs)" "$(stats jobs)"

# ---- the command does not get the SDK's credentials unless asked --------------------------------
cat >"$tmp/secrets.sh" <<EOF
#!/bin/sh
printf '%s|%s|%s|%s|%s\n' "\${BABELQUEUE_URL-unset}" "\${AWS_ACCESS_KEY_ID-unset}" "\${AWS_SECRET_ACCESS_KEY-unset}" \
  "\${AWS_SESSION_TOKEN-unset}" "\${OTHER-unset}" >>"$tmp/secrets.log"
EOF
chmod +x "$tmp/secrets.sh"
"$bq" publish secrets urn:a '{}' --count 2 >/dev/null
secret_env() { AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=s3cr3t-key AWS_SESSION_TOKEN=s3cr3t-token OTHER=kept "$@"; }
secret_env "$bq" work secrets --max-messages 1 -- "$tmp/secrets.sh" 2>/dev/null
check "by default the command gets none of the credentials" "unset|unset|unset|unset|kept" "$(sed -n 1p "$tmp/secrets.log")"
secret_env "$bq" work secrets --max-messages 1 --pass-credentials -- "$tmp/secrets.sh" 2>/dev/null
check "--pass-credentials hands them on" "$BABELQUEUE_URL|AKIDEXAMPLE|s3cr3t-key|s3cr3t-token|kept" \
  "$(sed -n 2p "$tmp/secrets.log")"

# ---- retry: BQ_ATTEMPTS increments ----------------------------------------------------------
"$bq" publish flaky urn:a '{}' >/dev/null
work flaky --idle-exit 0.3 -- "$tmp/flaky.sh"
check "flaky exit" 0 $?
check "flaky: attempts 0 then 1" $'0\n1' "$(cat "$tmp/flaky.log")"
contains "flaky: retried then succeeded" "processed 2, succeeded 1, failed 1, retried 1, dead-lettered 0" "$(cat "$tmp/work.err")"
contains "the command's stderr is passed on" "first try fails" "$(cat "$tmp/work.err")"
check "flaky: queue empty" "$(empty flaky)" "$(stats flaky)"

# With a retry backoff, the retry waits in the queue for its time, and
# --idle-exit waits for it: the worker leaves nothing of its own behind.
rm -f "$tmp/flaky.log"
"$bq" publish flaky urn:a '{}' >/dev/null
started=$SECONDS
work flaky --idle-exit 0.3 --backoff-initial 1500 --backoff-max 10000 --backoff-multiplier 2 -- "$tmp/flaky.sh"
check "backoff exit" 0 $?
check "backoff: the retry ran after its delay, before the exit" $'0\n1' "$(cat "$tmp/flaky.log")"
check "backoff: took at least the delay" yes "$([[ $((SECONDS - started)) -ge 1 ]] && echo yes || echo no)"
check "backoff: nothing left behind" "$(empty flaky)" "$(stats flaky)"

# ---- always failing: dead-lettered after --max-attempts ---------------------------------------
id=$("$bq" publish doomed urn:a '{"n":1}')
work doomed --idle-exit 0.3 --max-attempts 2 --dead-letter -- "$tmp/fail.sh"
check "doomed exit (the worker itself is fine)" 0 $?
check "doomed: CMD ran max-attempts times" 2 "$(wc -l <"$tmp/fail.log" | tr -d ' ')"
contains "doomed summary" "failed 2, retried 1, dead-lettered 1" "$(cat "$tmp/work.err")"
check "doomed: queue empty" "$(empty doomed)" "$(stats doomed)"
dl=$(drain doomed.dlq)
check "dead-lettered body decodes" '{"accepted":true,"reason":null,"urn":"urn:a","attempts":2,"lang":"cpp","warnings":[]}' \
  "$(printf '%s' "$dl" | "$bq" codec decode)"
contains "dead_letter block" "\"meta\":{\"id\":\"$id\"" "$dl"
contains "dead_letter reason and error (the end of stderr)" \
  '"dead_letter":{"reason":"failed","error":"command exited with status 7: some noise\nboom: the database is down","exception":null' "$dl"
contains "dead_letter original queue" '"original_queue":"doomed","attempts":2,"lang":"cpp"}' "$dl"

# --dlq names the dead-letter queue (and implies --dead-letter); a command killed by a signal fails.
"$bq" publish killed urn:a '{}' >/dev/null
work killed --idle-exit 0.3 --max-attempts 1 --dlq graveyard -- sh -c 'kill -9 $$'
check "killed exit" 0 $?
contains "killed by a signal" '"error":"command was killed by SIGKILL"' "$(drain graveyard)"
check "nothing in killed.dlq" "" "$(drain killed.dlq)"

# Without dead-lettering, an exhausted message is dropped.
rm -f "$tmp/fail.log"
"$bq" publish dropped urn:a '{}' >/dev/null
work dropped --idle-exit 0.3 --max-attempts 1 -- "$tmp/fail.sh"
contains "dropped summary" "dropped 1" "$(cat "$tmp/work.err")"
check "dropped: nothing left" "$(empty dropped)$(empty dropped.dlq)" "$(stats dropped)$(stats dropped.dlq)"

# ---- poison: to the DLQ byte for byte, CMD never run -------------------------------------------
printf '{"job":"urn:a", not json' | "$bq" send poisoned
work poisoned --idle-exit 0.3 --dead-letter -- "$tmp/never.sh"
check "poison exit" 0 $?
check "poison: CMD never ran" "no" "$([[ -e "$tmp/never.ran" ]] && echo yes || echo no)"
check "poison: in the DLQ byte for byte" '{"job":"urn:a", not json' "$(drain poisoned.dlq)"
contains "poison summary" "poison 1" "$(cat "$tmp/work.err")"
printf '{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":2}}' | "$bq" send poisoned
work poisoned --idle-exit 0.3 --dead-letter -- "$tmp/never.sh"
check "rejected envelope: CMD never ran" "no" "$([[ -e "$tmp/never.ran" ]] && echo yes || echo no)"
contains "rejected envelope: dead-lettered as poison" '"dead_letter":{"reason":"poison"' "$(drain poisoned.dlq)"

# ---- exit statuses 65 (dead-letter now) and 75 (retry) ------------------------------------------
printf '#!/bin/sh\necho run >>"%s/dataerr.log"\necho "no lines in the order" >&2\nexit 65\n' "$tmp" >"$tmp/dataerr.sh"
printf '#!/bin/sh\necho "$BQ_ATTEMPTS" >>"%s/tempfail.log"\n[ "$BQ_ATTEMPTS" = 0 ] && exit 75\nexit 0\n' "$tmp" >"$tmp/tempfail.sh"
chmod +x "$tmp/dataerr.sh" "$tmp/tempfail.sh"
"$bq" publish bad urn:a '{}' >/dev/null
work bad --idle-exit 0.3 --dead-letter --max-attempts 5 -- "$tmp/dataerr.sh"
check "65: run once" "run" "$(cat "$tmp/dataerr.log")"
contains "65: dead-lettered now with the command's words" "no lines in the order" "$(drain bad.dlq)"
"$bq" publish later urn:a '{}' >/dev/null
work later --idle-exit 0.5 --backoff-initial 100 -- "$tmp/tempfail.sh"
check "75: retried" "0 1" "$(tr '\n' ' ' <"$tmp/tempfail.log" | sed 's/ $//')"
check "75: nothing left" "" "$(drain later)"

# ---- --urn and --unknown-urn --------------------------------------------------------------------
unknown() {  # unknown STRATEGY MAX_ATTEMPTS: publish urn:other and work with only urn:known routed
  "$bq" publish "u-$1" urn:other '{}' >/dev/null
  work "u-$1" --idle-exit 0.3 --urn urn:known --unknown-urn "$1" --max-attempts "$2" --dead-letter -- "$tmp/never.sh"
}
unknown fail 1
check "unknown fail: exit" 0 $?
contains "unknown fail: dead-lettered as unknown_urn" '"reason":"unknown_urn","error":"no handler for URN \"urn:other\""' \
  "$(drain u-fail.dlq)"
unknown delete 1
contains "unknown delete: dropped" "dropped 1" "$(cat "$tmp/work.err")"
check "unknown delete: gone" "$(empty u-delete)$(empty u-delete.dlq)" "$(stats u-delete)$(stats u-delete.dlq)"
unknown release 3
check "unknown release: back in the queue, delayed" '{"queue":"u-release","ready":0,"reserved":0,"delayed":1}' \
  "$(stats u-release)"
unknown dead_letter 3
contains "unknown dead_letter: straight to the DLQ" '"reason":"unknown_urn"' "$(drain u-dead_letter.dlq)"
check "unknown URNs never ran CMD" "no" "$([[ -e "$tmp/never.ran" ]] && echo yes || echo no)"
"$bq" publish u-known urn:known '{}' >/dev/null
work u-known --idle-exit 0.3 --urn urn:known -- "$tmp/never.sh"
check "--urn routes that URN to CMD" "yes" "$([[ -e "$tmp/never.ran" ]] && echo yes || echo no)"

# ---- limits ---------------------------------------------------------------------------------------
"$bq" publish limited urn:a '{}' --count 3 >/dev/null
work limited --max-messages 1 -- true
check "--max-messages exit" 0 $?
contains "--max-messages summary" "stopped (max messages): processed 1, succeeded 1" "$(cat "$tmp/work.err")"
check "--max-messages leaves the rest" '{"queue":"limited","ready":2,"reserved":0,"delayed":0}' "$(stats limited)"

# Large bodies, and commands that do not read their input at all.
big=$(head -c 100000 /dev/zero | tr '\0' 'x')
"$bq" publish big urn:a "{\"blob\":\"$big\"}" >/dev/null
"$bq" publish big urn:a "{\"blob\":\"$big\"}" >/dev/null
work big --idle-exit 0.3 --max-messages 1 -- sh -c "wc -c >'$tmp/big.size'"
check "a large body reaches the command whole" "yes" "$([[ $(tr -d ' ' <"$tmp/big.size") -gt 100000 ]] && echo yes)"
work big --idle-exit 0.3 -- true
contains "a command that ignores its input succeeds" "processed 1, succeeded 1" "$(cat "$tmp/work.err")"

# ---- SIGTERM: the running command finishes, its message is acked ---------------------------------
"$bq" publish slow urn:a '{}' >/dev/null
"$bq" work slow --idle-exit 30 -- "$tmp/slow.sh" 2>"$tmp/slow.err" &
pid=$!
for _ in $(seq 100); do [[ -e "$tmp/slow.started" ]] && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
check "SIGTERM: exit 0" 0 $?
check "SIGTERM: the command finished" "yes" "$([[ -e "$tmp/slow.done" ]] && echo yes)"
check "SIGTERM: its message was acked" "$(empty slow)" "$(stats slow)"
contains "SIGTERM: said so" "SIGTERM: finishing the messages in flight" "$(cat "$tmp/slow.err")"
contains "SIGTERM: summary" "babelqueue: work slow stopped: processed 1, succeeded 1" "$(cat "$tmp/slow.err")"

# ---- SIGSTOP past the leases: what the paused worker had buffered is not run ---------------------
# Worker A receives six messages (one starts, five wait in its buffer) and is
# paused past the visibility timeout; worker B takes them all over. Resumed, A
# must not run the five it had buffered: their leases are gone.
cat >"$tmp/tagged.sh" <<EOF
#!/bin/sh
echo "\$TAG \$BQ_MESSAGE_ID" >>"$tmp/tagged.log"
touch "$tmp/tagged.started"
[ "\$TAG" = A ] && sleep 0.3
exit 0
EOF
chmod +x "$tmp/tagged.sh"
paused_url="sqlite://$tmp/paused.db?visibility_timeout=1s"
BABELQUEUE_URL="$paused_url" "$bq" publish paused urn:a '{}' --count 6 >/dev/null
TAG=A BABELQUEUE_URL="$paused_url" "$bq" work paused -- "$tmp/tagged.sh" 2>"$tmp/paused-a.err" &
pid=$!
for _ in $(seq 100); do [[ -e "$tmp/tagged.started" ]] && break; sleep 0.05; done
kill -STOP "$pid"
sleep 1.5
TAG=B BABELQUEUE_URL="$paused_url" "$bq" work paused --idle-exit 0.5 -- "$tmp/tagged.sh" 2>/dev/null
kill -CONT "$pid"
sleep 1
kill -TERM "$pid"
wait "$pid"
check "SIGSTOP: the paused worker ran only the message it had started" 1 "$(grep -c '^A ' "$tmp/tagged.log")"
check "SIGSTOP: the other worker ran all six" 6 "$(grep '^B ' "$tmp/tagged.log" | sort -u | wc -l | tr -d ' ')"
contains "SIGSTOP: said why" "ended before a handler could start it" "$(cat "$tmp/paused-a.err")"
check "SIGSTOP: nothing left" '{"queue":"paused","ready":0,"reserved":0,"delayed":0}' \
  "$(BABELQUEUE_URL="$paused_url" "$bq" stats paused --json)"

# ---- no command outlives its worker ----------------------------------------------------------------
# A command that leaves a background child, and ignores SIGTERM. `running`
# tells a live process from a dead one (a zombie not reaped yet is dead).
running() { local state; state=$(ps -o stat= -p "$1" 2>/dev/null) && [[ "$state" != Z* ]]; }
cat >"$tmp/family.sh" <<EOF
#!/bin/sh
trap '' TERM
echo "\$\$" >"$tmp/family.cmd"
sleep 60 &
echo "\$!" >"$tmp/family.grandchild"
wait
EOF
chmod +x "$tmp/family.sh"
start_family() {  # start_family QUEUE WORK-ARGS...: a worker whose command is running, its pid in $pid
  rm -f "$tmp/family.cmd" "$tmp/family.grandchild"
  "$bq" publish "$1" urn:a '{}' >/dev/null
  "$bq" work "$@" -- "$tmp/family.sh" 2>"$tmp/family.err" &
  pid=$!
  for _ in $(seq 100); do [[ -s "$tmp/family.grandchild" ]] && break; sleep 0.05; done
}
family_alive() {  # how many of the command and its child still run, after up to 2 s
  local n
  for _ in $(seq 40); do
    n=0
    for p in $(cat "$tmp/family.cmd" "$tmp/family.grandchild"); do running "$p" && n=$((n + 1)); done
    [[ $n -eq 0 ]] && break
    sleep 0.05
  done
  echo "$n"
  # A failed check must not leave them behind.
  for p in $(cat "$tmp/family.cmd" "$tmp/family.grandchild"); do running "$p" && kill -KILL "$p"; done
}
start_family orphans
check "kill -9: the command and its child were running" 2 "$(for p in $(cat "$tmp/family.cmd" "$tmp/family.grandchild"); do running "$p" && echo x; done | wc -l | tr -d ' ')"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
check "kill -9 of the worker: no child outlives it" 0 "$(family_alive)"

# A graceful stop: the command runs until --shutdown-deadline, then its
# process group gets SIGTERM (ignored here), then SIGKILL after --kill-grace;
# its message is handed back unchanged, and the stop took the deadline plus
# the grace.
start_family stubborn --shutdown-deadline 0.5 --kill-grace 0.5
started=$(date +%s%N)
kill -TERM "$pid"
wait "$pid"
check "graceful stop of a stubborn command: exit 0" 0 $?
took_ms=$((($(date +%s%N) - started) / 1000000))
check "graceful stop: within deadline + grace (+1 s)" yes "$([[ $took_ms -ge 900 && $took_ms -le 2000 ]] && echo yes || echo "no: $took_ms ms")"
check "graceful stop: no child left" 0 "$(family_alive)"
contains "graceful stop: SIGTERM at the deadline" "shutdown deadline: SIGTERM to the running commands" "$(cat "$tmp/family.err")"
contains "graceful stop: SIGKILL after the grace" "kill grace over: SIGKILL to the running commands" "$(cat "$tmp/family.err")"
check "graceful stop: the message is back, attempts unchanged" \
  '{"accepted":true,"reason":null,"urn":"urn:a","attempts":0,"lang":"cpp","warnings":[]}' \
  "$(drain stubborn | "$bq" codec decode)"

# SIGINT on an idle worker.
"$bq" work idle --idle-exit 30 -- true 2>/dev/null &
pid=$!
sleep 0.5
kill -INT "$pid"
wait "$pid"
check "SIGINT on an idle worker: exit 0" 0 $?

# ---- a broker that keeps failing: --idle-exit and --unreachable-exit end the worker -------------
# Another process takes the file's write lock once the worker has opened it,
# and a message becomes due: every receive then fails ("database is
# locked"). The worker must not wait for ever.
locked_url="sqlite://$tmp/locked.db?busy_timeout=50ms"
bounded() {  # bounded NAME WORK-ARGS...: runs work while the lock is held, records its status and time
  local name="$1"
  shift
  rm -f "$tmp/locked.held"
  BABELQUEUE_URL="$locked_url" "$bq" publish "$name" urn:a '{}' --delay 3000 >/dev/null
  local start=$SECONDS
  BABELQUEUE_URL="$locked_url" "$bq" work "$name" "$@" -- true 2>"$tmp/$name.err" &
  local pid=$!
  sleep 0.2
  python3 -c "import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute('BEGIN IMMEDIATE')
open(sys.argv[2], 'w').close()
time.sleep(8)" "$tmp/locked.db" "$tmp/locked.held" &
  local holder=$!
  for _ in $(seq 50); do [[ -e "$tmp/locked.held" ]] && break; sleep 0.05; done
  check "$name: the lock is held before the message is due" yes "$([[ -e "$tmp/locked.held" && $((SECONDS - start)) -le 2 ]] && echo yes)"
  ( sleep 10; kill -KILL "$pid" 2>/dev/null ) &
  local guard=$!
  wait "$pid"
  echo "$?" >"$tmp/$name.status"
  echo $((SECONDS - start)) >"$tmp/$name.took"
  kill "$guard" 2>/dev/null
  wait "$holder"
}
bounded idle-failing --idle-exit 4
check "--idle-exit with failing receives: exit 1" 1 "$(cat "$tmp/idle-failing.status")"
contains "--idle-exit: the last error" "database is locked" "$(tail -n 1 "$tmp/idle-failing.err")"
contains "--idle-exit: the bound" "idle_exit" "$(tail -n 1 "$tmp/idle-failing.err")"
check "--idle-exit: within its bound" yes "$([[ $(cat "$tmp/idle-failing.took") -le 6 ]] && echo yes)"
bounded unreachable --unreachable-exit 1
check "--unreachable-exit: exit 1" 1 "$(cat "$tmp/unreachable.status")"
contains "--unreachable-exit: the last error" "database is locked" "$(tail -n 1 "$tmp/unreachable.err")"
check "--unreachable-exit: within its bound" yes "$([[ $(cat "$tmp/unreachable.took") -le 6 ]] && echo yes)"
check "the messages are still there" '{"queue":"idle-failing","ready":1,"reserved":0,"delayed":0}1' \
  "$(BABELQUEUE_URL="$locked_url" "$bq" stats idle-failing --json)$(BABELQUEUE_URL="$locked_url" "$bq" stats unreachable --json | grep -c '"ready":1')"

# ---- usage errors and failures -------------------------------------------------------------------
"$bq" work q >/dev/null 2>&1
check "missing CMD" 2 $?
"$bq" work -- true >/dev/null 2>&1
check "missing QUEUE" 2 $?
"$bq" work q --unknown-urn explode -- true >/dev/null 2>&1
check "unknown strategy" 2 $?
"$bq" work q --max-attempts 0 -- true >/dev/null 2>&1
check "--max-attempts 0" 2 $?
err=$("$bq" work q --concurrency 0 -- true 2>&1)
check "--concurrency 0" 2 $?
contains "--concurrency 0 says the rule" "--concurrency: must be a whole number of at least 1, got '0'" "$err"
err=$("$bq" work q --max-messages -1 -- true 2>&1)
check "--max-messages -1" 2 $?
contains "--max-messages -1 says the rule" "--max-messages: must be a whole number (0 or more), got '-1'" "$err"
err=$("$bq" work q --idle-exit soon -- true 2>&1)
check "--idle-exit not a number" 2 $?
contains "--idle-exit not a number says so" "--idle-exit: not a number: 'soon'" "$err"
"$bq" work q --backoff-multiplier 0.5 -- true >/dev/null 2>&1
check "--backoff-multiplier below 1" 2 $?
err=$("$bq" work q --idle-exit 0.2 -- "$tmp/no-such-command" 2>&1)
check "a command that does not exist" 2 $?
contains "names the command" "cannot find the command '$tmp/no-such-command'" "$err"
err=$("$bq" --url "sqlite:///nonexistent-dir/x.db" work q -- true 2>&1)
check "unopenable URL" 1 $?
contains "unopenable URL: message" "cannot open sqlite:///nonexistent-dir/x.db" "$err"
"$bq" work q --idle-exit 0.2 --url "$BABELQUEUE_URL" -- true 2>/dev/null
check "--url after the command" 0 $?

finish
