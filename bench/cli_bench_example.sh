#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `babelqueue bench` example of docs/cli.md: both output forms of one
# command on a fresh SQLite file, under a line saying when, on which commit
# and on what machine they were measured (bench/regenerate_docs.py puts it there).
# Usage: bench/cli_bench_example.sh BABELQUEUE_BINARY
set -euo pipefail
bq="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
measured="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import machine; print(machine.describe(sys.argv[1]))' "$here")"
echo "$measured:"
echo
echo '```'
echo '$ babelqueue bench q --concurrency 4'
"$bq" --url "sqlite://$work/q.db" bench q --concurrency 4
echo '$ babelqueue bench q --concurrency 4 --json'
"$bq" --url "sqlite://$work/q.db" bench q --concurrency 4 --json
echo '```'
