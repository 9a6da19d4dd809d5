#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The robustness bar on the real Kafka broker (docs/robustness.md): 10 000
# messages over 3 partitions, 3 consumer processes, one killed -9 again and
# again, the broker stopped and started once mid-run; every meta.id must be
# consumed, duplicates are counted.
#
#   robustness.sh PATH/TO/babelqueue_robustness_agent [extra robustness.py args]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
agent="$1"
shift
url="$("$root/scripts/broker" url kafka | tail -n 1)"
# partitions=3: the topic the agents create; session_timeout=6 (the broker's
# minimum): a killed consumer's partitions are handed to the others quickly.
# A group of its own, so no other test's consumers share its rebalances.
exec python3 "$root/tests/robustness/robustness.py" --agent "$agent" \
  --url "$url?partitions=3&session_timeout=6&group=robustness-$(date +%s)-$$" \
  --messages 10000 --producers 2 --workers 3 --concurrency 2 --prefetch 16 \
  --rate 500 --batch 20 --work-ms 2 --kill-every 4 --kills 4 \
  --restart-broker "'$root/scripts/broker' stop kafka && '$root/scripts/broker' start kafka" --restart-at 0.4 \
  --timeout 200 "$@"
