# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/support/cli_broker_test.sh for servicebus: a wrong key and a
# malformed connection string say so, without the secret.
wrong="${AZURE_SERVICEBUS_CONNECTION_STRING/SharedAccessKey=*;/SharedAccessKey=not-the-key;}"
err="$(AZURE_SERVICEBUS_CONNECTION_STRING="$wrong" "$cli" --url "$url" drain "$queue" --wait 0.5 2>&1)"
check "wrong key: non-zero exit" 1 "$([[ $? -ne 0 ]] && echo 1 || echo 0)"
contains "wrong key: the service refused the token" "refused the token" "$err"
check "wrong key: the key is not printed" "" "$(grep -o 'not-the-key' <<<"$err")"
err="$(AZURE_SERVICEBUS_CONNECTION_STRING="Endpoint=sb://127.0.0.1:1;SharedAccessKey=s3cr3t" "$cli" --url sb:// drain "$queue" --wait 0.1 2>&1)"
contains "bad connection string: says what is missing" "SharedAccessKeyName" "$err"
check "bad connection string: the key is not printed" "" "$(grep -o 's3cr3t' <<<"$err")"
