#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The codec commands of the CLI, as a script would use them: outputs and exit
# codes (0 ok, 1 failure, 2 usage).
set -u
bq="$1"
suite="$2"
# shellcheck source=../support/check.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/check.sh"

out=$("$bq" codec encode urn:babel:orders:created '{"order_id":1042,"f":1.0,"g":1e16,"s":"<\u00e9>"}' --queue orders)
check "encode exit" 0 $?
data=$(printf '%s' "$out" | sed -E 's/.*"data":(\{[^}]*\}).*/\1/')
check "encode data bytes" '{"order_id":1042,"f":1.0,"g":1e+16,"s":"<é>"}' "$data"
check "encode frame start" '{"job":"urn:babel:orders:created","trace_id":"' "${out:0:46}"

"$bq" codec encode ' ' '{}' >/dev/null 2>&1
check "encode blank urn" 1 $?
"$bq" codec encode urn:a '[1]' >/dev/null 2>&1
check "encode array data" 1 $?
"$bq" codec encode urn:a >/dev/null 2>&1
check "encode missing arg" 2 $?

check "decode fixture" '{"accepted":true,"reason":null,"urn":"urn:babel:orders:created","attempts":0,"lang":"go","warnings":[]}' \
  "$("$bq" codec decode < "$suite/fixtures/urn-alias.json")"
check "decode poison" '{"accepted":false,"reason":"invalid_json","urn":null,"attempts":null,"lang":null,"warnings":[]}' \
  "$(printf 'nope' | "$bq" codec decode)"
check "decode rejected" '{"accepted":false,"reason":"unsupported_schema_version","urn":"u","attempts":0,"lang":null,"warnings":["/timestamp"]}' \
  "$(printf '{"job":"u","meta":{"schema_version":2},"timestamp":1}' | "$bq" codec decode)"

body='{"job":"u","trace_id":"t","data":{"n":1.50},"meta":{"schema_version":1,"x":[1]},"attempts":2,"y":null}'
check "retry" '{"job":"u","trace_id":"t","data":{"n":1.50},"meta":{"schema_version":1,"x":[1]},"attempts":3,"y":null}' \
  "$(printf '%s\n' "$body" | "$bq" codec retry)"
printf '[]' | "$bq" codec retry >/dev/null 2>&1
check "retry poison exit" 1 $?
# attempts at the top of its range: no wrap-around to a negative count (this
# script runs under UBSan too), a refusal with the reason.
top='{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":9223372036854775807}'
err=$(printf '%s' "$top" | "$bq" codec retry 2>&1 >/dev/null)
check "retry of the largest attempts exit" 1 $?
contains "retry of the largest attempts: why" "the largest count there is" "$err"
check "dead-letter of the largest attempts" '"original_queue":"orders","attempts":9223372036854775807,' \
  "$(printf '%s' "$top" | "$bq" codec dead-letter failed orders | grep -o '"original_queue":"orders","attempts":9223372036854775807,')"
check "decode of the largest attempts" '{"accepted":true,"reason":null,"urn":"u","attempts":9223372036854775807,"lang":null,"warnings":[]}' \
  "$(printf '%s' "$top" | "$bq" codec decode)"

dl=$(printf '%s' "$body" | "$bq" codec dead-letter failed orders --error boom)
check "dead-letter keeps attempts" '"attempts":2,"dead_letter":{"reason":"failed","error":"boom","exception":null,"failed_at":' "$(printf '%s' "$dl" | grep -o '"attempts":2,"dead_letter":{"reason":"failed","error":"boom","exception":null,"failed_at":')"
check "dead-letter block tail" '"original_queue":"orders","attempts":2,"lang":"cpp"},"y":null}' "$(printf '%s' "$dl" | grep -o '"original_queue":"orders","attempts":2,"lang":"cpp"},"y":null}')"
check "dead-letter raw" 'not json' "$(printf 'not json' | "$bq" codec dead-letter poison orders)"
"$bq" codec dead-letter exploded orders </dev/null >/dev/null 2>&1
check "dead-letter bad reason" 2 $?
"$bq" nonsense >/dev/null 2>&1
check "unknown command" 2 $?
"$bq" --help >/dev/null 2>&1
check "help" 0 $?

finish
