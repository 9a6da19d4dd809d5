#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The conformance suite's idempotency sequences on the PostgreSQL store, with
# and without the in-flight claim, through the CLI: every check of
# idempotency.postgresql passes and none is skipped.
#
#   conformance_test.sh BABELQUEUE SUITE_DIR BROKER_SCRIPT
set -euo pipefail
bq="$1" suite="$2" broker="$3"
url="$("$broker" url postgres | tail -n 1)?table=bq_conformance_$$"
out="$("$bq" conformance "$suite" --url "$url" 2>&1 || true)"
lines="$(grep -E '^(PASS|FAIL|SKIP).*idempotency\.postgresql' <<<"$out" || true)"
echo "$lines"
[[ -n "$lines" ]] || { echo "FAIL: no idempotency.postgresql checks ran"; echo "$out"; exit 1; }
if grep -qE '^(FAIL|SKIP)' <<<"$lines"; then exit 1; fi
echo "ok: $(grep -c '^PASS' <<<"$lines") idempotency.postgresql checks passed"
