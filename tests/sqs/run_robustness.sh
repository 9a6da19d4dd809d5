#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The robustness run on the real SQS-compatible server (scripts/broker's sqs):
# 5000 messages from 2 producers, 3 consumer processes, one of them killed -9
# again and again; a 3 s visibility timeout brings a killed consumer's
# reservations back. Usage: run_robustness.sh AGENT [extra robustness.py args]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
agent="$1"
shift
# The local server accepts any credentials; real AWS ones are never needed.
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-AKIDBABELQUEUETEST}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-babelqueue-test-secret}"
url="$("$root/scripts/broker" url sqs | tail -n 1)"
exec python3 "$root/tests/robustness/robustness.py" --agent "$agent" --url "$url&create=1" \
  --visibility-timeout 3 --messages 5000 --producers 2 --workers 3 --concurrency 4 --prefetch 16 \
  --rate 400 --batch 10 --work-ms 5 --kill-every 1.5 --kills 6 --timeout 240 "$@"
