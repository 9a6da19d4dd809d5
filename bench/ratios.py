#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs babelqueue_bench_codec and prints the performance targets as PASS/FAIL.

Usage:
  bench/ratios.py BENCH_BINARY [--strict] [--input FILE] [benchmark args...]

Every argument after the binary that this script does not know is passed to
the benchmark, e.g. --benchmark_min_time=0.2 or --benchmark_repetitions=5.
With repetitions the median is used, otherwise the single run. Times are CPU
times (the machine is shared; CPU time hides most of the other load).

--input FILE reads a saved --benchmark_format=json output instead of running
the binary (BENCH_BINARY is then ignored and may be "-").

The table is a report: the exit code is 0 even with FAIL rows, unless
--strict is given (then 1 when any row fails); 2 when the run itself fails.
"""

import json
import subprocess
import sys

PAYLOADS = ("small", "4k")


def usage(message):
    print(f"ratios.py: {message}", file=sys.stderr)
    print("usage: ratios.py BENCH_BINARY [--strict] [--input FILE] [benchmark args...]", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if argv else 2)
    binary, rest = argv[0], argv[1:]
    strict = False
    input_file = None
    passthrough = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--strict":
            strict = True
        elif arg == "--input":
            if i + 1 >= len(rest):
                usage("--input needs a file")
            input_file = rest[i + 1]
            i += 1
        elif arg.startswith("--input="):
            input_file = arg.split("=", 1)[1]
        else:
            passthrough.append(arg)
        i += 1
    return binary, strict, input_file, passthrough


def run_benchmark(binary, passthrough):
    command = [binary, "--benchmark_format=json", *passthrough]
    print("running: " + " ".join(command), file=sys.stderr)
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, check=False)
    except OSError as error:
        usage(f"cannot run {binary}: {error}")
    if done.returncode != 0:
        usage(f"{binary} exited with {done.returncode}")
    return json.loads(done.stdout)


def collect(report):
    """Maps a benchmark name to {'time': ns, 'allocs': n or None}."""
    medians = {}
    runs = {}
    for entry in report.get("benchmarks", []):
        if entry.get("error_occurred"):
            continue
        name = entry.get("run_name", entry["name"])
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[entry.get("time_unit", "ns")]
        row = {"time": entry["cpu_time"] * scale, "allocs": entry.get("allocs_per_iter")}
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "median":
                medians[name] = row
        else:
            runs.setdefault(name, row)
    runs.update(medians)
    return runs


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def targets(results):
    """Yields (target, payload, measured text, verdict) rows."""

    def time(bench, payload):
        row = results.get(f"{bench}/{payload}")
        return row["time"] if row else None

    for payload in PAYLOADS:
        decode = time("BM_DecodeAccept", payload)
        simd = time("BM_BaselineSimdjsonParse", payload)
        nlohmann_parse = time("BM_BaselineNlohmannParse", payload)
        encode = time("BM_Encode", payload)
        dump = time("BM_BaselineNlohmannDump", payload)

        def ratio_row(target, numerator, denominator, passes, detail):
            if numerator is None or denominator is None:
                return (target, payload, "missing", "FAIL")
            ratio = numerator / denominator
            return (target, payload, f"{ratio:.2f}x ({detail(numerator, denominator)})",
                    "PASS" if passes(ratio) else "FAIL")

        yield ratio_row("DecodeAccept <= 3x SimdjsonParse", decode, simd, lambda r: r <= 3.0,
                        lambda n, d: f"{fmt_ns(n)} / {fmt_ns(d)}")
        yield ratio_row("NlohmannParse >= 10x DecodeAccept", nlohmann_parse, decode, lambda r: r >= 10.0,
                        lambda n, d: f"{fmt_ns(n)} / {fmt_ns(d)}")
        yield ratio_row("NlohmannDump >= 5x Encode", dump, encode, lambda r: r >= 5.0,
                        lambda n, d: f"{fmt_ns(n)} / {fmt_ns(d)}")
        route = results.get(f"BM_DecodeRoute/{payload}")
        allocs = route["allocs"] if route else None
        if allocs is None:
            yield ("decode+route allocs/iter <= 1", payload, "missing", "FAIL")
        else:
            yield ("decode+route allocs/iter <= 1", payload, f"{allocs:g}", "PASS" if allocs <= 1.0 else "FAIL")


def main(argv):
    binary, strict, input_file, passthrough = parse_args(argv)
    if input_file:
        with open(input_file, encoding="utf-8") as f:
            report = json.load(f)
    else:
        report = run_benchmark(binary, passthrough)
    results = collect(report)

    print("Benchmark (CPU time)                 time        allocs/iter")
    for name in sorted(results):
        row = results[name]
        allocs = "" if row["allocs"] is None else f"{row['allocs']:g}"
        print(f"  {name:<34} {fmt_ns(row['time']):>10}  {allocs:>10}")
    print()

    rows = list(targets(results))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    header = ("target", "payload", "measured", "verdict")
    widths = [max(w, len(h)) for w, h in zip(widths, header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line.rstrip())
    print("-" * len(line))
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    failed = sum(1 for row in rows if row[3] != "PASS")
    print()
    # Not "N passed, N failed": CI logs read that phrase as a test runner's verdict.
    print(f"targets met: {len(rows) - failed} of {len(rows)}")
    return 1 if strict and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
