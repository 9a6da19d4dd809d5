#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The babelqueue CLI over a broker's plain and TLS URLs, for every broker
# whose conformance section reads its projection back: the conformance
# runner's section against the live broker, publish/drain over both URLs, a
# `work` consumer's retry and dead letter, redrive back to the queue, and an
# unreachable broker. EXTRA, a script of the broker's own checks, is sourced
# last (it sees $cli, $url, $queue and the check functions).
#   cli_broker_test.sh SOURCE_DIR CLI CONFORMANCE_DIR BROKER [EXTRA]
# Environment, for brokers that differ: BQ_CLI_SECTION, the conformance
# section's name (default BROKER); BQ_CLI_UNREACHABLE_URL, a URL of the
# broker's scheme that reaches nothing (default BROKER://127.0.0.1:1?...),
# and BQ_CLI_UNREACHABLE_ENV, VAR=VALUE pairs set for that command only. A
# broker without a tls_url in its info is run over its plain URL only.
set -uo pipefail
source_dir="$1"
cli="$2"
suite="$3"
name="$4"
extra="${5:-}"
# shellcheck source=check.sh
source "$source_dir/tests/support/check.sh"
broker="$source_dir/scripts/broker"
url="$("$broker" url "$name" | tail -n 1)"
info="$("$broker" info "$name")"
tls_url="$(sed -n 's/^tls_url=//p' <<<"$info")"
ca="$(sed -n 's/^tls_ca=//p' <<<"$info")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

section="${BQ_CLI_SECTION:-$name}"
out="$("$cli" conformance "$suite" --url "$url" 2>&1)"
echo "$out" | grep "$section"
check "conformance: $section checks, all passed" "$(grep -c " $section/" <<<"$out")" "$(grep -c "^PASS $section/" <<<"$out")"
contains "conformance: projection read back" "PASS $section/property_projection/broker" "$out"
check "conformance: no FAIL line" "" "$(grep '^FAIL' <<<"$out")"

queue="bq-cli-$RANDOM$RANDOM"
targets=("$url")
[[ -n "$tls_url" ]] && targets+=("$tls_url?tls_ca=$ca")
for target in "${targets[@]}"; do
  id="$("$cli" --url "$target" publish "$queue" urn:cli:test:sent '{"n":1}' 2>&1)"
  check "publish prints one id ($target)" 1 "$(grep -c -E '^[0-9a-f-]{36}$' <<<"$id")"
  body="$("$cli" --url "$target" drain "$queue" --wait 5 --max 1 2>&1)"
  contains "drain returns the envelope ($target)" "\"id\":\"$id\"" "$body"
done

# peek shows a message and leaves it, or says the broker cannot and takes nothing.
peeked="$queue-peek"
id="$("$cli" --url "$url" publish "$peeked" urn:cli:test:peeked '{"n":3}' 2>&1)"
shown="$("$cli" --url "$url" peek "$peeked" --json --max 5 2>&1)"
case $? in
  0) contains "peek shows the message" "$id" "$shown" ;;
  1) contains "peek says the broker cannot browse" "without" "$shown" ;;
  *) check "peek exits 0 or 1" "0 or 1" "$shown" ;;
esac
contains "the message is still there after peek" "\"id\":\"$id\"" "$("$cli" --url "$url" drain "$peeked" --wait 5 --max 1 2>&1)"

# A consumer that always fails: retried, then dead-lettered to <queue>.dlq;
# redrive sends it back with attempts reset.
printf '#!/bin/sh\necho "$BQ_ATTEMPTS" >>"%s/fail.log"\necho boom >&2\nexit 7\n' "$tmp" >"$tmp/fail.sh"
chmod +x "$tmp/fail.sh"
export BABELQUEUE_URL="$url"
id="$("$cli" publish "$queue" urn:cli:test:fails '{"n":2}')"
"$cli" work "$queue" --dead-letter --max-attempts 3 --backoff-initial 50 --idle-exit 3 -- "$tmp/fail.sh" 2>"$tmp/work.err"
check "work exits 0 at idle" 0 $?
check "the command ran once per attempt" "0 1 2" "$(tr '\n' ' ' <"$tmp/fail.log" | sed 's/ $//')"
dead="$("$cli" drain "$queue.dlq" --wait 5 --max 1 2>&1)"
contains "the dead letter names its queue" "\"original_queue\":\"$queue\"" "$dead"
contains "the dead letter keeps the id" "\"id\":\"$id\"" "$dead"
printf '%s' "$dead" | "$cli" send "$queue.dlq"
"$cli" redrive "$queue.dlq" --wait 5 >"$tmp/redrive.out" 2>&1
check "redrive exits 0" 0 $?
again="$("$cli" drain "$queue" --wait 5 --max 1 2>&1)"
contains "redriven to the queue" "\"id\":\"$id\"" "$again"
contains "attempts reset" "\"attempts\":0" "$again"

# A bad URL and an unreachable broker are clear errors, not hangs.
read -r -a unreachable_env <<<"${BQ_CLI_UNREACHABLE_ENV:-}"
err="$(env "${unreachable_env[@]}" "$cli" --url "${BQ_CLI_UNREACHABLE_URL:-$name://127.0.0.1:1?connect_timeout=2s}" \
  drain "$queue" --wait 0.1 2>&1)"
check "unreachable: non-zero exit" 1 "$([[ $? -ne 0 ]] && echo 1 || echo 0)"
contains "unreachable: names the endpoint" "127.0.0.1:1" "$err"

if [[ -n "$extra" ]]; then
  # shellcheck source=/dev/null
  source "$extra"
fi
finish
