# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/support/cli_broker_test.sh for artemis: a refused
# password says so.
err="$("$cli" --url "${url/admin:admin@/admin:nope@}" drain "$queue" --wait 0.1 2>&1)"
contains "wrong password: says so" "credentials refused" "$err"
