#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Token authentication on a real broker: a second Pulsar instance of its own
# (BQ_PULSAR_AUTH=token, its own state directory and ports, stopped at the
# end) accepts the token scripts/broker signed for it and refuses a wrong or
# missing one with a clear error, within the connect timeout, the token never
# shown.
#   token_auth_test.sh SOURCE_DIR CLI
set -uo pipefail
source_dir="$1"
cli="$2"
# shellcheck source=../support/check.sh
source "$source_dir/tests/support/check.sh"
broker="$source_dir/scripts/broker"
tmp="$(mktemp -d)"
export BQ_BROKER_DIR="$tmp/state" BQ_PULSAR_AUTH=token BQ_PULSAR_TLS_PORT=0
export BQ_BROKER_PORT_OFFSET="${BQ_TOKEN_TEST_PORT_OFFSET:-1020}"
unset BQ_PULSAR_PORT BQ_PULSAR_HTTP_PORT BQ_PULSAR_BOOKIE_PORT BQ_PULSAR_FAULT_PROXY_PORT
trap '"$broker" stop pulsar >/dev/null 2>&1; rm -rf "$tmp"' EXIT

url="$("$broker" start pulsar 2>"$tmp/start.err" | tail -n 1)"
check "an authenticating broker starts" 0 "$([[ "$url" == pulsar://* ]] && echo 0 || { cat "$tmp/start.err" >&2; echo 1; })"
token="$(cat "$("$broker" info pulsar | sed -n 's/^token_file=//p')")"
queue="bq-token-$RANDOM$RANDOM"

id="$("$cli" --url "$url?token=$token" publish "$queue" urn:token:test:ok '{"n":1}' 2>&1)"
check "the signed token publishes" 1 "$(grep -c -E '^[0-9a-f-]{36}$' <<<"$id")"
body="$("$cli" --url "$url?token=$token" drain "$queue" --max 1 --wait 10 2>&1)"
contains "the signed token consumes" "\"id\":\"$id\"" "$body"

start=$SECONDS
err="$("$cli" --url "$url?token=not.a-valid.token&connect_timeout=5s" publish "$queue" urn:token:test:no '{}' 2>&1)"
status=$?
check "a wrong token: non-zero exit" 1 "$([[ $status -ne 0 ]] && echo 1 || echo 0)"
contains "a wrong token: says the broker refused it" "AuthenticationError" "$err"
check "a wrong token: never shown" "" "$(grep -o 'not.a-valid.token' <<<"$err")"
check "a wrong token: within the connect timeout" 1 "$(( SECONDS - start <= 5 ? 1 : 0 ))"
err="$("$cli" --url "$url" publish "$queue" urn:token:test:no '{}' 2>&1)"
contains "no token: refused too" "AuthenticationError" "$err"
finish
