#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The robustness run on the real Pulsar broker (docs/robustness.md): 5000
# messages from 2 producers, 3 consumer processes, one of them killed -9
# again and again (the broker redelivers what a killed consumer held when its
# connection drops), and the broker stopped and started again mid-run with
# its data kept. Every meta.id must be consumed; duplicates are counted.
#   run_robustness.sh AGENT [robustness.py options...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
agent="$1"
shift
broker="$root/scripts/broker"
url="$("$broker" url pulsar | tail -n 1)"
# No visibility timeout: a held message comes back when its connection drops.
# reconnect_max=2s: producers and consumers return soon after the restart.
exec python3 "$root/tests/robustness/robustness.py" --agent "$agent" \
  --url "$url?reconnect_max=2s" \
  --messages 6000 --producers 2 --workers 3 --concurrency 2 --prefetch 16 \
  --rate 500 --batch 20 --work-ms 2 --kill-every 1.5 --kills 5 \
  --restart-broker "'$broker' stop pulsar && BQ_PULSAR_KEEP_DATA=1 '$broker' start pulsar" --restart-at 0.4 \
  --drain-grace 10 --timeout 280 "$@"
