#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The robustness bar on the real Artemis broker: 10 000 durable messages from 2
# producer processes, 3 consumer processes (one killed -9 again and again), and
# the broker itself stopped and started once mid-run. Every meta.id must be
# consumed; duplicates are counted and reported. Artemis redelivers a killed
# consumer's unsettled messages as soon as its connection drops, so no
# visibility timeout is needed; the restart keeps the messages because they
# are durable, and the transport reconnects by itself.
#   run_robustness.sh SOURCE_DIR AGENT [extra robustness.py options]
set -euo pipefail
source_dir="$1"
agent="$2"
shift 2
broker="$source_dir/scripts/broker"
url="$("$broker" url artemis | tail -n 1)"
exec python3 "$source_dir/tests/robustness/robustness.py" \
  --agent "$agent" --url "$url" \
  --restart-broker "'$broker' stop artemis && '$broker' start artemis" --restart-at 0.4 \
  --messages 10000 --producers 2 --workers 3 --concurrency 2 --prefetch 16 \
  --rate 2000 --batch 20 --work-ms 5 --kill-every 1.5 --kills 6 --timeout 240 "$@"
