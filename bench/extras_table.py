#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs babelqueue_bench_extras and prints the middleware table of
docs/benchmarks.md: each benchmark's time per message and its overhead over
the plain handler of the same run, under a line saying when, on which commit
and on what machine it was measured (bench/regenerate_docs.py puts it there).

    bench/extras_table.py BENCH_BINARY [benchmark args...]

The Redis rows run when BQ_BENCH_REDIS_URL names a server, as the binary says;
unset, the Redis of `scripts/broker start redis` is used when it runs.
"""
import json
import os
import subprocess
import sys

import machine

NOTES = {
    "BM_IdempotencyMemory/0": "(seen-set)", "BM_IdempotencyMemory/1": "(claim)",
    "BM_IdempotencySqlite/0": "(seen-set)", "BM_IdempotencySqlite/1": "(claim)",
    "BM_IdempotencyRedis/0": "(seen-set)", "BM_IdempotencyRedis/1": "(claim)",
}


def us(ns):
    value = ns / 1e3
    return f"{value:.2f} µs" if value < 10 else f"{value:.3g} µs" if value < 100 else f"{value:.0f} µs"


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    measured = machine.describe(here)
    if not os.environ.get("BQ_BENCH_REDIS_URL"):
        status = subprocess.run([os.path.join(here, "..", "scripts", "broker"), "status", "redis"],
                                capture_output=True, text=True, check=False)
        if status.returncode == 0 and status.stdout.split():
            os.environ["BQ_BENCH_REDIS_URL"] = status.stdout.split()[-1]
    done = subprocess.run([argv[0], "--benchmark_format=json", *argv[1:]], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 1
    times = {}
    for entry in json.loads(done.stdout)["benchmarks"]:
        if entry.get("error_occurred") or entry.get("run_type") == "aggregate":
            continue
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[entry.get("time_unit", "ns")]
        times[entry["name"]] = entry["real_time"] * scale
    plain = times.get("BM_PlainHandler")
    redis = os.environ.get("BQ_BENCH_REDIS_URL")
    print(f"{measured}, load average {machine.load()} at the end"
          + (f"; Redis at {redis}" if redis else "; no Redis (BQ_BENCH_REDIS_URL unset)") + ":")
    print()
    print("| benchmark | time per message | overhead over the plain handler |")
    print("| --- | ---: | ---: |")
    for name, ns in times.items():
        label = f"`{name}`" + (f" {NOTES[name]}" if name in NOTES else "")
        if name == "BM_PlainHandler" or plain is None:
            extra = "—"
        elif name == "BM_SchemaValidateValue":
            extra = "(the check alone)"
        else:
            extra = f"+{us(ns - plain)}" + (f" ({ns / plain:.1f}×)" if name == "BM_SchemaConsume" else "")
        print(f"| {label} | {us(ns)} | {extra} |")
    # Against the family's budget: 750 µs, its reference broker round trip.
    shares = [(store, times[f"BM_Idempotency{store}/0"] - plain) for store in ("Redis", "Sqlite")
              if plain is not None and f"BM_Idempotency{store}/0" in times]
    if shares:
        print()
        print("Against the 750 µs reference round trip of the family's budget, the seen-set adds "
              + " and ".join(f"{100 * extra / 750e3:.0f} % on {'SQLite' if store == 'Sqlite' else store}"
                             for store, extra in shares) + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
