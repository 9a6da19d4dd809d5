#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What Microsoft's client never exercises, checked on the Service Bus test
# server that scripts/broker runs, with python-qpid-proton from the server's own
# venv (server_checks.py): refusal without a token, detach on token expiry, an
# uncounted release, a refused session receiver.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

info="$("$root/scripts/broker" info servicebus)"
field() { sed -n "s/^$1=//p" <<<"$info" | head -n 1; }
"$root/scripts/broker" status servicebus >/dev/null ||
  { echo "server_checks: the Service Bus test server is not running (scripts/broker start servicebus)" >&2; exit 1; }
SERVICEBUS_TEST_SERVER_KEY="$(field key)" exec "$(field python)" "$here/server_checks.py" \
  "$(field port)" "$(field key_name)"
