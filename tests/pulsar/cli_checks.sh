# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/support/cli_broker_test.sh for pulsar: a misspelt URL
# option is named.
err="$("$cli" --url "$url?subscriptoin=x" drain "$queue" --wait 0.1 2>&1)"
contains "misspelt option: named" "subscriptoin" "$err"
