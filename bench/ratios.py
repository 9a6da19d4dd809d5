#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs babelqueue_bench_codec and prints the performance targets as PASS/FAIL.

Usage:
  bench/ratios.py BENCH_BINARY [--strict] [--markdown] [--input FILE] [benchmark args...]

Every argument after the binary that this script does not know is passed to
the benchmark, e.g. --benchmark_min_time=0.2 or --benchmark_repetitions=5.
With repetitions the median is used, otherwise the single run. Times are CPU
times (the machine is shared; CPU time hides most of the other load).

--markdown prints the tables of docs/benchmarks.md instead, under a line
saying when, on which commit and on what machine they were measured
(bench/regenerate_docs.py puts them there).

--input FILE reads a saved --benchmark_format=json output instead of running
the binary (BENCH_BINARY is then ignored and may be "-").

The table is a report: the exit code is 0 even with FAIL rows, unless
--strict is given (then 1 when any row fails); 2 when the run itself fails.
"""

import json
import os
import subprocess
import sys

import machine

PAYLOADS = ("small", "4k")


def usage(message):
    print(f"ratios.py: {message}", file=sys.stderr)
    print("usage: ratios.py BENCH_BINARY [--strict] [--markdown] [--input FILE] [benchmark args...]",
          file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if argv else 2)
    binary, rest = argv[0], argv[1:]
    strict = False
    markdown = False
    input_file = None
    passthrough = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--strict":
            strict = True
        elif arg == "--markdown":
            markdown = True
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
    return binary, strict, markdown, input_file, passthrough


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
        typed_direct = time("BM_EncodeTypedDirect", payload)
        dump = time("BM_BaselineNlohmannDump", payload)

        def ratio_row(target, numerator, denominator, passes, detail):
            if numerator is None or denominator is None:
                return (target, payload, "missing", "FAIL")
            ratio = numerator / denominator
            return (target, payload, f"{ratio:.2f}x ({detail(numerator, denominator)})",
                    "PASS" if passes(ratio) else "FAIL")

        yield ratio_row("DecodeAccept <= 1.5x SimdjsonParse", decode, simd, lambda r: r <= 1.5,
                        lambda n, d: f"{fmt_ns(n)} / {fmt_ns(d)}")
        yield ratio_row("NlohmannParse >= 10x DecodeAccept", nlohmann_parse, decode, lambda r: r >= 10.0,
                        lambda n, d: f"{fmt_ns(n)} / {fmt_ns(d)}")
        yield ratio_row("NlohmannDump >= 5x Encode", dump, encode, lambda r: r >= 5.0,
                        lambda n, d: f"{fmt_ns(n)} / {fmt_ns(d)}")
        yield ratio_row("NlohmannDump >= 5x EncodeTypedDirect", dump, typed_direct, lambda r: r >= 5.0,
                        lambda n, d: f"{fmt_ns(n)} / {fmt_ns(d)}")
        route = results.get(f"BM_DecodeRoute/{payload}")
        allocs = route["allocs"] if route else None
        if allocs is None:
            yield ("decode+route allocs/iter <= 1", payload, "missing", "FAIL")
        else:
            yield ("decode+route allocs/iter <= 1", payload, f"{allocs:g}", "PASS" if allocs <= 1.0 else "FAIL")


# The typed-message paths (typed_message.hpp, data_writer.hpp): the benchmark,
# how the docs and the report name it, and its target row in targets() (None:
# no target, the note alone).
TYPED_PATHS = (
    ("BM_EncodeTyped", "through `to_value()` and then `Envelope::make`", "to_value() + make", None),
    ("BM_EncodeTypedDirect", "by its `write_data()` straight into the envelope (`Envelope::make(message)`)",
     "write_data() into make", "NlohmannDump >= 5x EncodeTypedDirect"),
)


def typed_label(target):
    """What the note of a typed path says of its target."""
    return "no target" if target is None else f"target: {target}"


def typed_encode_note(results, fmt, name):
    """A typed-message path (name) next to the Value path and nlohmann's dump."""
    parts = []
    for payload in PAYLOADS:
        typed = results.get(f"{name}/{payload}")
        encode = results.get(f"BM_Encode/{payload}")
        dump = results.get(f"BM_BaselineNlohmannDump/{payload}")
        if not (typed and encode and dump):
            continue
        parts.append(f"{payload} {fmt(typed['time'])}: {typed['time'] / encode['time']:.2f}x the Value path, "
                     f"nlohmann dump {dump['time'] / typed['time']:.2f}x it")
    return "; ".join(parts)


def fmt_doc(ns):
    """A time as the docs write it: 3 significant digits, ns / µs / ms."""
    for unit, scale in (("ms", 1e6), ("µs", 1e3)):
        if ns >= scale * 0.9995:  # 999.7 ns is written 1 µs, not 1000 ns
            value = ns / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{ns:.0f} ns"


def kernel(report):
    """The JSON kernel the decoder ran (the benchmark's json_kernel context)."""
    return report.get("context", {}).get("json_kernel", "not reported")


def markdown(results, rows, measured):
    """The tables of docs/benchmarks.md's latest figures."""
    out = [measured + ". Medians of the repetitions, CPU time:", ""]
    out += ["| benchmark | /small | /4k | allocs/iter (small, 4k) |", "| --- | ---: | ---: | ---: |"]
    names = ["BM_Encode", "BM_EncodeNewIds", "BM_EncodeTyped", "BM_EncodeTypedDirect", "BM_DecodeAccept",
             "BM_DecodeRoute", "BM_Retry", "BM_BaselineSimdjsonParse", "BM_BaselineNlohmannParse",
             "BM_BaselineNlohmannDump"]
    for name in names:
        cells = []
        allocs = []
        for payload in PAYLOADS:
            row = results.get(f"{name}/{payload}")
            cells.append(fmt_doc(row["time"]) if row else "missing")
            if row and row["allocs"] is not None:
                allocs.append(f"{row['allocs']:g}")
        out.append(f"| `{name}` | {cells[0]} | {cells[1]} | {', '.join(allocs)} |")
    out += ["", "| target | /small | /4k |", "| --- | --- | --- |"]
    by_target = {}
    for target, payload, text, verdict in rows:
        by_target.setdefault(target, {})[payload] = f"{text.split(' (')[0]} — {verdict}"
    for target, cells in by_target.items():
        out.append(f"| {target} | {cells.get('small', 'missing')} | {cells.get('4k', 'missing')} |")
    encode = results.get("BM_Encode/4k")
    retry = results.get("BM_Retry/4k")
    if encode and retry:
        out += ["", f"Re-emitting the 4k envelope for a retry (`BM_Retry/4k`, {fmt_doc(retry['time'])}) takes "
                f"{retry['time'] / encode['time']:.2f}× the time of encoding it from a `Value` (`BM_Encode/4k`, "
                f"{fmt_doc(encode['time'])})."]
    for name, doc_path, _, target in TYPED_PATHS:
        typed = typed_encode_note(results, fmt_doc, name)
        if typed:
            out += ["", f"A typed message encoded as `Publisher::publish(message)` does, {doc_path} "
                    f"(`{name}`, {typed_label(target)}): {typed}."]
    return "\n".join(out)


def main(argv):
    binary, strict, as_markdown, input_file, passthrough = parse_args(argv)
    measured = machine.describe(os.path.dirname(os.path.abspath(__file__)))
    if input_file:
        with open(input_file, encoding="utf-8") as f:
            report = json.load(f)
    else:
        report = run_benchmark(binary, passthrough)
    results = collect(report)
    if as_markdown:
        rows = list(targets(results))
        print(markdown(results, rows, measured + f", load average {machine.load()} at the end, "
                       f"JSON kernel {kernel(report)}"))
        return 1 if strict and any(row[3] != "PASS" for row in rows) else 0

    print(f"JSON kernel: {kernel(report)}")
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
    for name, _, report_path, target in TYPED_PATHS:
        typed = typed_encode_note(results, fmt_ns, name)
        if typed:
            print(f"typed message, {report_path} ({typed_label(target)}): {typed}")
    print()
    # Not "N passed, N failed": CI logs read that phrase as a test runner's verdict.
    print(f"targets met: {len(rows) - failed} of {len(rows)}")
    return 1 if strict and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
