#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Artemis benchmark against the broker of scripts/broker (started
# when it is not running), with the published Python SDK side by side (its
# virtual environment from scripts/python-sdk).
#   bench/artemis/run.sh [--markdown] BUILD_DIR/bench/artemis/babelqueue_bench_artemis [--messages N] [--rounds R] ...
# BQ_BENCH_NO_PYTHON=1 leaves the Python SDK out.
# --markdown prints the report as a block for the docs: a line saying when, on
# which commit and on what machine it ran, then the report
# (bench/with_machine.py; bench/regenerate_docs.py puts it in place).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ "${1:-}" == --markdown ]]; then
  shift
  exec python3 "$root/bench/with_machine.py" "$root/bench/artemis/run.sh" "$@"
fi
bench="$1"
shift
"$root/scripts/broker" status artemis >/dev/null 2>&1 || "$root/scripts/broker" start artemis >/dev/null
url="$("$root/scripts/broker" url artemis | tail -n 1)"
python=()
if [[ -z "${BQ_BENCH_NO_PYTHON:-}" ]]; then
  python=(--python "$("$root/scripts/python-sdk" path)" --python-script "$root/bench/artemis/python_sdk_bench.py")
fi
exec "$bench" --url "$url" "${python[@]}" "$@"
