#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Service Bus benchmark against the test server of scripts/broker
# (started when it is not running), the credentials from its connection string.
#   bench/servicebus/run.sh BUILD_DIR/bench/servicebus/babelqueue_bench_servicebus [--messages N] [--rounds R] ...
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="$1"
shift
"$root/scripts/broker" status servicebus >/dev/null 2>&1 || "$root/scripts/broker" start servicebus >/dev/null
info="$("$root/scripts/broker" info servicebus)"
AZURE_SERVICEBUS_CONNECTION_STRING="$(sed -n 's/^connection_string=//p' <<<"$info")"
export AZURE_SERVICEBUS_CONNECTION_STRING
exec "$bench" --url "$(sed -n 's/^url=//p' <<<"$info")?lock_duration=$(sed -n 's/^lock_duration=//p' <<<"$info")s" "$@"
