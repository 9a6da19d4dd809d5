#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The babelqueue CLI over amqp:// and amqps://: the conformance runner's
# rabbitmq section against the live broker, and a publish/drain round trip
# (the CLI reaches the transport through the URL registry only).
#   cli_conformance_test.sh SOURCE_DIR CLI CONFORMANCE_DIR
set -uo pipefail
source_dir="$1"
cli="$2"
suite="$3"
# shellcheck source=../support/check.sh
source "$source_dir/tests/support/check.sh"
broker="$source_dir/scripts/broker"
url="$("$broker" url rabbitmq | tail -n 1)"
info="$("$broker" info rabbitmq)"
tls_url="$(sed -n 's/^tls_url=//p' <<<"$info" | sed 's/@127\.0\.0\.1:/@localhost:/')"
ca="$(sed -n 's/^tls_ca=//p' <<<"$info")"

out="$("$cli" conformance "$suite" --url "$url" 2>&1)"
contains "conformance: projection computed" "PASS rabbitmq.property_projection (computed)" "$out"
contains "conformance: projection read back" "PASS rabbitmq.property_projection (read back from the broker)" "$out"
check "conformance: no FAIL line" "" "$(grep '^FAIL' <<<"$out")"

queue="bq-cli-$RANDOM$RANDOM"
for target in "$url" "$tls_url?cacert=$ca"; do
  id="$("$cli" --url "$target" publish "$queue" urn:cli:test:sent '{"n":1}' 2>&1)"
  check "publish prints one id ($target)" 1 "$(grep -c -E '^[0-9a-f-]{36}$' <<<"$id")"
  body="$("$cli" --url "$target" drain "$queue" 2>&1)"
  contains "drain returns the envelope ($target)" "\"id\":\"$id\"" "$body"
done
finish
