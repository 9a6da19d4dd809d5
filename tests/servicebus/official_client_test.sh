#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Service Bus test server's faithfulness test: Microsoft's azure-servicebus
# (pinned in scripts/python-sdk) runs every operation the transport relies on
# against the server that scripts/broker runs (official_client_test.py; one
# PASS or FAIL line per check). The server must be running: CTest's
# broker_servicebus fixture, or `scripts/broker start servicebus`.
# Extra arguments go to the Python test (e.g. --only abandon peek).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

info="$("$root/scripts/broker" info servicebus)"
field() { sed -n "s/^$1=//p" <<<"$info" | head -n 1; }
"$root/scripts/broker" status servicebus >/dev/null ||
  { echo "official_client_test: the Service Bus test server is not running (scripts/broker start servicebus)" >&2; exit 1; }

exec "$root/scripts/python-sdk" run "$here/official_client_test.py" \
  --connection-string "$(field connection_string)" \
  --lock-duration "$(field lock_duration)" \
  --max-delivery-count "$(field max_delivery_count)" "$@"
