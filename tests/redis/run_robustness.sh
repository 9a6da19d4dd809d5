#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The robustness bar on Redis: 10 000 messages from 2 producers, 3 consumer
# processes, one of them killed -9 again and again, and the Redis server
# stopped gracefully (SIGTERM: SHUTDOWN with the append-only file fsynced)
# and started again mid-run. Every meta.id must be consumed; duplicates are
# counted and reported.
#   run_robustness.sh SOURCE_DIR AGENT [robustness.py options...]
set -euo pipefail
source_dir="$1"
agent="$2"
shift 2
broker="$source_dir/scripts/broker"
url="$("$broker" url redis | tail -n 1)"
exec python3 "$source_dir/tests/robustness/robustness.py" --agent "$agent" \
  --url "$url" --visibility-timeout 2 \
  --messages 10000 --producers 2 --workers 3 --concurrency 2 --prefetch 16 \
  --rate 2000 --batch 20 --work-ms 5 --kill-every 1 --kills 6 --timeout 150 \
  --restart-broker "'$broker' stop redis && '$broker' start redis" --restart-at 0.4 \
  "$@"
