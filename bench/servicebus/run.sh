#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Service Bus benchmark against the test server of scripts/broker
# (started when it is not running), the credentials from its connection string.
#   bench/servicebus/run.sh [--markdown] BUILD_DIR/bench/servicebus/babelqueue_bench_servicebus [--messages N] [--rounds R] ...
# --markdown prints the report as a block for the docs
# (bench/support/markdown_mode.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../support/markdown_mode.sh
source "$root/bench/support/markdown_mode.sh"
markdown_mode "$root/bench/servicebus/run.sh" "$@"
bench="$1"
shift
"$root/scripts/broker" status servicebus >/dev/null 2>&1 || "$root/scripts/broker" start servicebus >/dev/null
info="$("$root/scripts/broker" info servicebus)"
AZURE_SERVICEBUS_CONNECTION_STRING="$(sed -n 's/^connection_string=//p' <<<"$info")"
export AZURE_SERVICEBUS_CONNECTION_STRING
exec "$bench" --url "$(sed -n 's/^url=//p' <<<"$info")?lock_duration=$(sed -n 's/^lock_duration=//p' <<<"$info")s" "$@"
