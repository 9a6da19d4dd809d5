#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The published Python SDK's own Service Bus transport (babelqueue[azureservicebus],
# pinned in scripts/python-sdk) against the Service Bus test server that
# scripts/broker runs: URL and connection-string handling, publish, pop, ack,
# a retry, and the attempts it reads after native abandons (python_sdk_check.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

"$root/scripts/broker" status servicebus >/dev/null ||
  { echo "python_sdk_check: the Service Bus test server is not running (scripts/broker start servicebus)" >&2; exit 1; }
exec "$root/scripts/python-sdk" run "$here/python_sdk_check.py" \
  --url "$("$root/scripts/broker" url servicebus)" \
  --connection-string "$("$root/scripts/broker" info servicebus | sed -n 's/^connection_string=//p')"
