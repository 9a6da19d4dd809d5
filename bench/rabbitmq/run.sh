#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the RabbitMQ benchmark against the broker of scripts/broker (started
# when it is not running).
#   bench/rabbitmq/run.sh [--markdown] BUILD_DIR/bench/rabbitmq/babelqueue_bench_rabbitmq [--messages N] [--rounds R] ...
# --markdown prints the report as a block for the docs: a line saying when, on
# which commit and on what machine it ran, then the report
# (bench/with_machine.py; bench/regenerate_docs.py puts it in place).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../support/markdown_mode.sh
source "$root/bench/support/markdown_mode.sh"
markdown_mode "$root/bench/rabbitmq/run.sh" "$@"
bench="$1"
shift
"$root/scripts/broker" status rabbitmq >/dev/null 2>&1 || "$root/scripts/broker" start rabbitmq >/dev/null
url="$("$root/scripts/broker" url rabbitmq | tail -n 1)"
exec "$bench" --url "$url" "$@"
