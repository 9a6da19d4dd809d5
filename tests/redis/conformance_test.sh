#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The conformance suite's `redis` block (payload identity) and its
# `idempotency` sequences on the Redis store, through the CLI, against the
# real server over redis:// and rediss://.
#   conformance_test.sh SOURCE_DIR BABELQUEUE_CLI SUITE_DIR
set -uo pipefail
src="$1"
cli="$2"
suite="$3"
# shellcheck source=../support/check.sh
source "$src/tests/support/check.sh"

info="$("$src/scripts/broker" info redis)"
plain="$(sed -n 's/^url=//p' <<<"$info")"
tls="$(sed -n 's/^tls_url=//p' <<<"$info")?tls_ca=$(sed -n 's/^tls_ca=//p' <<<"$info")"

for url in "$plain" "$tls"; do
  out="$("$cli" --url "$url" conformance "$suite" 2>&1)"
  status=$?
  check "conformance exit status ($url)" 0 "$status"
  contains "produce: the list element is the envelope ($url)" "PASS redis.payload_identity.produce" "$out"
  contains "reserve: the same bytes come back ($url)" "PASS redis.payload_identity.reserve" "$out"
  contains "idempotency on the Redis store ($url)" "PASS idempotency.redis" "$out"
  contains "with the claim ($url)" ".claim.forget-allows-rerun" "$out"
  contains "nothing failed ($url)" " 0 failed" "$out"
done
finish
