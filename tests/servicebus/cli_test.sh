#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The babelqueue CLI on the Service Bus test server (tests/support/cli_broker_test.sh):
# the credentials in AZURE_SERVICEBUS_CONNECTION_STRING, as the Python SDK reads
# them; the conformance section is `asb`; an unreachable namespace is a
# connection string whose endpoint is port 1. Then cli_checks.sh.
#   cli_test.sh SOURCE_DIR CLI CONFORMANCE_DIR
set -euo pipefail
source_dir="$1"
here="$source_dir/tests/servicebus"
info="$("$source_dir/scripts/broker" info servicebus)"
AZURE_SERVICEBUS_CONNECTION_STRING="$(sed -n 's/^connection_string=//p' <<<"$info")"
export AZURE_SERVICEBUS_CONNECTION_STRING
export BQ_CLI_SECTION=asb
export BQ_CLI_UNREACHABLE_URL="sb://127.0.0.1:1?connect_timeout=2s"
export BQ_CLI_UNREACHABLE_ENV="AZURE_SERVICEBUS_CONNECTION_STRING=Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true"
exec "$source_dir/tests/support/cli_broker_test.sh" "$source_dir" "$2" "$3" servicebus "$here/cli_checks.sh"
