#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The robustness bar on the Service Bus test server: 10 000 messages from 2
# producer processes, 3 consumer processes, one killed -9 again and again.
# Every meta.id must be consumed; duplicates are counted and reported. A
# killed consumer's locked messages come back when their locks expire (the
# server's lock duration, 5 s under scripts/broker), as in the service. The
# test server keeps messages in memory, so it is not restarted mid-run.
#   run_robustness.sh SOURCE_DIR AGENT [extra robustness.py options]
set -euo pipefail
source_dir="$1"
agent="$2"
shift 2
broker="$source_dir/scripts/broker"
info="$("$broker" info servicebus)"
url="$(sed -n 's/^url=//p' <<<"$info")"
lock="$(sed -n 's/^lock_duration=//p' <<<"$info")"
AZURE_SERVICEBUS_CONNECTION_STRING="$(sed -n 's/^connection_string=//p' <<<"$info")"
export AZURE_SERVICEBUS_CONNECTION_STRING
exec python3 "$source_dir/tests/robustness/robustness.py" \
  --agent "$agent" --url "$url?lock_duration=${lock}s" \
  --messages 10000 --producers 2 --workers 3 --concurrency 2 --prefetch 16 \
  --rate 1000 --batch 20 --work-ms 5 --kill-every 1.5 --kills 6 --timeout 240 "$@"
