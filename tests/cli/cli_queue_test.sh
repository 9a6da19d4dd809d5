#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The queue commands of the CLI (publish, send, drain, stats, redrive, bench,
# --url), as a script would use them, against temporary SQLite files: outputs
# and exit codes (0 ok, 1 failure, 2 usage).
set -u
bq="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"  # absolute: some checks cd
# shellcheck source=../support/check.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/check.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset BABELQUEUE_URL
url="sqlite://$tmp/q.db"  # $tmp is absolute: sqlite:///tmp/...
uuid='^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'

# ---- publish / drain round trip ----------------------------------------------------
id=$("$bq" --url "$url" publish orders urn:babel:orders:created '{"order_id":1042,"f":1.0}' --trace-id trace-1)
check "publish exit" 0 $?
[[ "$id" =~ $uuid ]]
check "publish prints a v4 id" 0 $?
body=$("$bq" --url "$url" drain orders --wait 0.2)
check "drain exit" 0 $?
check "drained body is the canonical envelope" \
  "{\"job\":\"urn:babel:orders:created\",\"trace_id\":\"trace-1\",\"data\":{\"order_id\":1042,\"f\":1.0},\"meta\":{\"id\":\"$id\",\"queue\":\"orders\",\"lang\":\"cpp\",\"schema_version\":1,\"created_at\":N},\"attempts\":0}" \
  "$(printf '%s' "$body" | sed -E 's/"created_at":[0-9]+/"created_at":N/')"
check "drained body decodes" '{"accepted":true,"reason":null,"urn":"urn:babel:orders:created","attempts":0,"lang":"cpp","warnings":[]}' \
  "$(printf '%s' "$body" | "$bq" codec decode)"
check "drained body re-encodes to itself" "$body" "$(printf '%s' "$body" | "$bq" codec retry | sed 's/"attempts":1}$/"attempts":0}/')"
check "drain acked it" "" "$("$bq" --url "$url" drain orders --wait 0.1)"

ids=$("$bq" --url "$url" publish orders urn:a '{"n":1}' --count 5)
check "publish --count exit" 0 $?
check "publish --count prints N ids" 5 "$(printf '%s\n' "$ids" | grep -cE "$uuid")"
check "publish --count ids are distinct" 5 "$(printf '%s\n' "$ids" | sort -u | wc -l | tr -d ' ')"
drained=$("$bq" --url "$url" drain orders --wait 0.2 --max 3)
check "drain --max" 3 "$(printf '%s\n' "$drained" | wc -l | tr -d ' ')"
rest=$("$bq" --url "$url" drain orders --wait 0.2)
check "drain the rest, in publish order" "$ids" \
  "$(printf '%s\n%s\n' "$drained" "$rest" | sed -E 's/.*"meta":\{"id":"([^"]+)".*/\1/')"

# --delay: not drained before the delay has passed; --header travels (checked by work's BQ_HEADERS in cli_work_test.sh).
"$bq" --url "$url" publish later urn:a '{}' --delay 1500 --header k=v >/dev/null
check "publish --delay exit" 0 $?
check "stats shows the delayed message" '{"queue":"later","ready":0,"reserved":0,"delayed":1}' \
  "$("$bq" --url "$url" stats later --json)"
check "not drained before the delay" "" "$("$bq" --url "$url" drain later --wait 0.2)"
check "drained after the delay" 1 "$("$bq" --url "$url" drain later --wait 3 | grep -c '"job":"urn:a"')"

# ---- --url before and after the command, BABELQUEUE_URL, the default ---------------
"$bq" publish where urn:a '{}' --url "$url" >/dev/null
check "--url after the command" '{"queue":"where","ready":1,"reserved":0,"delayed":0}' "$("$bq" --url "$url" stats where --json)"
check "--url after the queue" '{"queue":"where","ready":1,"reserved":0,"delayed":0}' "$("$bq" stats where --url "$url" --json)"
check "BABELQUEUE_URL" '{"queue":"where","ready":1,"reserved":0,"delayed":0}' \
  "$(BABELQUEUE_URL="$url" "$bq" stats where --json)"
check "--url wins over BABELQUEUE_URL" '{"queue":"where","ready":1,"reserved":0,"delayed":0}' \
  "$(BABELQUEUE_URL="sqlite://$tmp/other.db" "$bq" stats where --url "$url" --json)"
(cd "$tmp" && "$bq" publish here urn:a '{}' >/dev/null)
check "the default URL is sqlite://babelqueue.db" "yes" "$([[ -f "$tmp/babelqueue.db" ]] && echo yes)"
check "memory:// stats" '{"queue":"q","ready":0,"reserved":0,"delayed":0}' "$("$bq" --url memory:// stats q --json)"

# ---- send: raw bytes, no envelope ---------------------------------------------------
printf 'not json {\n' | "$bq" --url "$url" send raw
check "send exit" 0 $?
check "send keeps the bytes (one trailing newline dropped)" 'not json {' "$("$bq" --url "$url" drain raw --wait 0.2)"
printf '{"a":1}\r\n\nsecond line\nthird' | "$bq" send raw --lines --url "$url" --header x=y
check "send --lines exit" 0 $?
check "send --lines: one message per non-empty line" $'{"a":1}\nsecond line\nthird' "$("$bq" --url "$url" drain raw --wait 0.2)"
printf '' | "$bq" --url "$url" send raw --lines
check "send --lines with nothing" 0 $?

# ---- stats --------------------------------------------------------------------------
"$bq" --url "$url" publish counted urn:a '{}' --count 3 >/dev/null
"$bq" --url "$url" publish counted urn:a '{}' --delay 60000 >/dev/null
check "stats" '{"queue":"counted","ready":3,"reserved":0,"delayed":1}' "$("$bq" --url "$url" stats counted --json)"
check "stats of an unknown queue" '{"queue":"nothing","ready":0,"reserved":0,"delayed":0}' \
  "$("$bq" --url "$url" stats nothing --json)"

# ---- peek: looking without taking; --json records -------------------------------------
"$bq" --url "$url" publish look urn:a '{"n":1}' --count 2 >/dev/null
printf 'poison \xff' | "$bq" --url "$url" send look --header k=v
out=$("$bq" --url "$url" peek look)
check "peek exit" 0 $?
check "peek shows every ready message" 3 "$(printf '%s\n' "$out" | wc -l | tr -d ' ')"
check "peek shows the raw bodies, in order" "poison" "$(printf '%s\n' "$out" | tail -1 | cut -c1-6)"
check "peek --max" 1 "$("$bq" --url "$url" peek look --max 1 | wc -l | tr -d ' ')"
check "peek takes nothing" '{"queue":"look","ready":3,"reserved":0,"delayed":0}' "$("$bq" --url "$url" stats look --json)"
"$bq" --url "$url" peek look --max 0 >/dev/null 2>&1
check "peek --max 0" 2 $?
check "peek of an empty queue" "" "$("$bq" --url "$url" peek nothing-here)"
if command -v python3 >/dev/null; then
  records='import json, sys
for line in sys.stdin:
    r = json.loads(line)
    body = r["body"]
    print(sorted(r), r["queue"], r["native_attempts"], r["headers"], r.get("body_utf8", True),
          json.loads(body)["job"] if body.startswith("{") else ascii(body))'
  check "peek --json: one record per message, poison included" \
    "['body', 'headers', 'native_attempts', 'queue'] look 0 {} True urn:a
['body', 'headers', 'native_attempts', 'queue'] look 0 {} True urn:a
['body', 'body_utf8', 'headers', 'native_attempts', 'queue'] look 0 {'k': 'v'} False 'poison \ufffd'" \
    "$("$bq" --url "$url" peek look --json | python3 -c "$records")"
  check "drain --json: the same records; peek counted no delivery" \
    "$("$bq" --url "$url" peek look --json | python3 -c "$records")" \
    "$("$bq" --url "$url" drain look --json --wait 0.2 | python3 -c "$records")"
fi
check "stats, for people" "look: 0 ready, 0 reserved, 0 delayed" "$("$bq" --url "$url" stats look)"

# ---- redrive ------------------------------------------------------------------------
dead() {  # dead URN ERROR: a dead-letter body for queue orders
  "$bq" codec encode "$1" '{"n":1}' --queue orders | "$bq" codec dead-letter failed orders --error "$2"
}
dead urn:x boom | "$bq" --url "$url" send orders.dlq
dead urn:y bang | "$bq" --url "$url" send orders.dlq
printf 'poison' | "$bq" --url "$url" send orders.dlq
out=$("$bq" --url "$url" redrive orders.dlq --dry-run --wait 0.2)
check "redrive --dry-run exit" 0 $?
contains "redrive --dry-run item" "dry run (would go to orders)" "$out"
check "redrive --dry-run summary" "redriven 0, skipped 3" "$(printf '%s\n' "$out" | tail -1)"
check "redrive --dry-run moves nothing" '{"queue":"orders.dlq","ready":3,"reserved":0,"delayed":0}' \
  "$("$bq" --url "$url" stats orders.dlq --json)"
if command -v python3 >/dev/null; then
  check "redrive --dry-run --json" "0 3 ['dry run', 'dry run', 'not a readable envelope (invalid_json)'] [False, False, False] None" \
    "$("$bq" --url "$url" redrive orders.dlq --dry-run --wait 0.2 --json | python3 -c 'import json, sys
r = json.loads(sys.stdin.read())
print(r["redriven"], r["skipped"], sorted(i["note"].split(":")[0] + (")" if ":" in i["note"] else "") for i in r["items"]), [i["redriven"] for i in r["items"]], r["error"])')"
fi
out=$("$bq" --url "$url" redrive orders.dlq --max 1 --to elsewhere --wait 0.2)
check "redrive --max --to exit" 0 $?
check "redrive --max --to" "redriven 1, skipped 0" "$(printf '%s\n' "$out" | tail -1)"
[[ "$(printf '%s\n' "$out" | head -1)" =~ ^redriven\ [0-9a-f-]{36}\ urn:x\ -\>\ elsewhere$ ]]
check "redrive item line" 0 $?
out=$("$bq" redrive orders.dlq --url "$url" --wait 0.2)
check "redrive exit" 0 $?
contains "redrive moves it back to its original queue" " urn:y -> orders" "$out"
contains "redrive skips poison, saying why" "skipped - not a readable envelope (invalid_json: " "$out"
check "redrive summary" "redriven 1, skipped 1" "$(printf '%s\n' "$out" | tail -1)"
back=$("$bq" --url "$url" drain orders --wait 0.2)
check "the redriven message: attempts 0, no dead_letter block" \
  '{"accepted":true,"reason":null,"urn":"urn:y","attempts":0,"lang":"cpp","warnings":[]}' \
  "$(printf '%s' "$back" | "$bq" codec decode)"
check "no dead_letter block left" 0 "$(printf '%s' "$back" | grep -c dead_letter)"
check "the poison stays in the DLQ" "poison" "$("$bq" --url "$url" drain orders.dlq --wait 0.2)"
check "redrive --to elsewhere landed" 1 "$("$bq" --url "$url" drain elsewhere --wait 0.2 | grep -c '"job":"urn:x"')"

# ---- bench --------------------------------------------------------------------------
json_keys() {  # the sorted keys of a JSON line, latency_ms's keys after a dot
  python3 -c 'import json,sys
d = json.loads(sys.stdin.read())
print(" ".join(sorted(d)) + " . " + " ".join(sorted(d["latency_ms"])), d["messages"], d["transport"])'
}
out=$("$bq" --url "$url" bench benchq --messages 40 --size 200 --concurrency 2 --json)
check "bench exit" 0 $?
if command -v python3 >/dev/null; then
  check "bench JSON" "concurrency consume_msgs_per_s latency_ms messages publish_msgs_per_s size transport . max p50 p90 p99 40 sqlite" \
    "$(printf '%s' "$out" | json_keys)"
  check "bench memory://" "concurrency consume_msgs_per_s latency_ms messages publish_msgs_per_s size transport . max p50 p90 p99 25 memory" \
    "$("$bq" --url memory://bench bench b --messages 25 --json | json_keys)"
else
  contains "bench JSON" '"latency_ms":{"p50":' "$out"
fi
out=$("$bq" --url memory://bench bench human --messages 25)
check "bench, for people: exit" 0 $?
check "bench, for people: what ran" "bench memory://: 25 messages of about 256 bytes, 1 handler thread" \
  "$(printf '%s\n' "$out" | head -1)"
check "bench, for people: the figures" "  publish|  consume|  latency" "$(printf '%s\n' "$out" | tail -3 | cut -c1-9 | paste -sd '|')"
check "bench leaves the queue empty" '{"queue":"benchq","ready":0,"reserved":0,"delayed":0}' \
  "$("$bq" --url "$url" stats benchq --json)"
"$bq" --url "$url" publish busy urn:a '{}' >/dev/null
"$bq" --url "$url" bench busy --messages 5 >/dev/null 2>&1
check "bench refuses a queue that is not empty" 1 $?

# ---- failures and usage errors -------------------------------------------------------
err=$("$bq" --url "sqlite:///nonexistent-dir/x.db" stats q 2>&1)
check "unopenable sqlite file" 1 $?
contains "unopenable: names the URL" "babelqueue: cannot open sqlite:///nonexistent-dir/x.db: " "$err"
err=$("$bq" --url "nosuch://user:hunter2@host/x" publish q urn:a '{}' 2>&1)
check "unknown scheme" 1 $?
contains "unknown scheme: redacted URL" "cannot open nosuch://user:***@host/x" "$err"
check "unknown scheme: no password" "" "$(printf '%s' "$err" | grep hunter2)"
contains "unknown scheme: in a shell user's words" "this babelqueue does not know nosuch:// URLs (it opens " "$err"
check "unknown scheme: no advice for programmers" "" "$(grep register_transport <<<"$err")"
"$bq" --url "redis://u:pw@host:notaport" stats q >/dev/null 2>&1
check "malformed URL" 1 $?
"$bq" --url "$url" publish q urn:a 'not json' >/dev/null 2>&1
check "publish: DATA_JSON not JSON" 1 $?
"$bq" --url "$url" publish q ' ' '{}' >/dev/null 2>&1
check "publish: blank URN" 1 $?
"$bq" --url "$url" publish q urn:a >/dev/null 2>&1
check "publish: missing DATA_JSON" 2 $?
err=$("$bq" --url "$url" publish q urn:a '{}' --count 0 2>&1)
check "publish: --count 0" 2 $?
contains "publish: --count 0 says the rule" "--count: must be a whole number of at least 1, got '0'" "$err"
check "publish: --count 0, no 300-digit range" "" "$(grep -E '[0-9]{20}' <<<"$err")"
err=$("$bq" --url "$url" publish q urn:a null 2>&1)
check "publish: DATA_JSON null" 1 $?
contains "publish: DATA_JSON null says why" "DATA_JSON must be a JSON object, got null" "$err"
err=$("$bq" --url "$url" publish q urn:a '[1]' 2>&1)
check "publish: DATA_JSON an array" 1 $?
check "publish: nothing published for bad DATA_JSON" '{"queue":"q","ready":0,"reserved":0,"delayed":0}' \
  "$("$bq" --url "$url" stats q --json)"
"$bq" --url "$url" publish q urn:a '{}' --delay -1 >/dev/null 2>&1
check "publish: negative --delay" 2 $?
"$bq" --url "$url" publish q urn:a '{}' --header novalue >/dev/null 2>&1
check "publish: --header without =" 2 $?
"$bq" --url "$url" drain >/dev/null 2>&1
check "drain: missing QUEUE" 2 $?
err=$("$bq" --url "$url" drain q --wait abc 2>&1)
check "drain: bad --wait" 2 $?
contains "drain: bad --wait is not a number" "--wait: not a number: 'abc'" "$err"
"$bq" --url "$url" drain q --wait -1 >/dev/null 2>&1
check "drain: negative --wait" 2 $?
err=$("$bq" --url "$url" drain q --max -1 --wait 0.1 2>&1)
check "drain: negative --max" 2 $?
contains "drain: negative --max says the rule" "--max: must be a whole number (0 or more), got '-1'" "$err"
"$bq" --url "$url" redrive q.dlq --max -2 --wait 0.1 >/dev/null 2>&1
check "redrive: negative --max" 2 $?
"$bq" --url "$url" stats >/dev/null 2>&1
check "stats: missing QUEUE" 2 $?
"$bq" --url "$url" redrive >/dev/null 2>&1
check "redrive: missing DLQ" 2 $?
err=$("$bq" --url "$url" bench q --messages 0 2>&1)
check "bench: --messages 0" 2 $?
contains "bench: --messages 0 says the rule" "--messages: must be a whole number of at least 1, got '0'" "$err"
err=$("$bq" --url "$url" bench q --concurrency 0 2>&1)
check "bench: --concurrency 0" 2 $?
contains "bench: --concurrency 0 says the rule" "--concurrency: must be a whole number of at least 1, got '0'" "$err"
"$bq" stats q --url >/dev/null 2>&1
check "--url without a value" 2 $?
err=$("$bq" --url "$url" frobnicate q 2>&1)
check "unknown command" 2 $?
contains "unknown command: named" "babelqueue: unknown command 'frobnicate' (the commands: " "$err"
err=$("$bq" codec frobnicate 2>&1)
check "unknown codec command" 2 $?
contains "unknown codec command: named" "unknown command 'codec frobnicate' (the commands: encode, decode" "$err"
err=$("$bq" 2>&1)
check "no command" 2 $?
contains "no command: the usage" "Usage: babelqueue [OPTIONS] SUBCOMMAND" "$err"
contains "no command: the commands listed" "publish" "$err"
"$bq" publish --help >/dev/null 2>&1
check "publish --help" 0 $?
check "help lists the commands" 8 "$("$bq" --help | grep -cE '^  (publish|send|drain|peek|stats|redrive|work|bench) ')"

finish
