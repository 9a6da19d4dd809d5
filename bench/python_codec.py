#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""This SDK's codec against the published Python SDK's, on the same envelopes, in one run.

Usage:
  bench/python_codec.py BENCH_BINARY [--python PYTHON] [--repetitions N] [--min-time S] [--strict] [--markdown]

BENCH_BINARY is babelqueue_bench_codec. It writes its two payloads (the
conformance `order-created` envelope and the 4 KiB one) to a temporary
directory, then runs BM_DecodeAccept and BM_Encode (medians of the
repetitions, CPU time). The Python SDK (the interpreter of
`scripts/python-sdk path` unless --python is given) then runs on the same
bytes, best of the repetitions of a timed loop of about --min-time seconds:

  decode + accepts   EnvelopeCodec.decode(text) then EnvelopeCodec.accepts(envelope)
  encode             EnvelopeCodec.encode(envelope) of the decoded envelope

and the script prints the ratios (Python time / ours) against the targets:
at least 15x on decode + accepts and 30x on encode. --markdown prints the
table of docs/benchmarks.md instead, under a line saying when, on which
commit and on what machine it was measured. The exit code is 0 even with FAIL
rows unless --strict is given; 2 when a run fails.
"""

import json
import os
import subprocess
import sys
import tempfile

import machine

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOADS = ("small", "4k")
TARGETS = {"decode + accepts": ("BM_DecodeAccept", 15.0), "encode": ("BM_Encode", 30.0)}

# Runs inside the Python SDK's interpreter: times both operations on each file
# and prints one JSON object {payload: {operation: seconds per call}}.
PYTHON_LOOP = r"""
import json, sys, time
from babelqueue import EnvelopeCodec

min_time, repetitions, files = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]

def best(fn):
    calls = 1
    while True:  # calibrate on a tenth of min_time, then size a repetition to min_time
        start = time.process_time()
        for _ in range(calls):
            fn()
        elapsed = time.process_time() - start
        if elapsed >= min_time / 10:
            break
        calls *= 2
    calls = max(1, int(calls * min_time / elapsed))
    times = []
    for _ in range(repetitions):
        start = time.process_time()
        for _ in range(calls):
            fn()
        times.append((time.process_time() - start) / calls)
    return sorted(times)[len(times) // 2]

out = {}
for path in files:
    text = open(path, encoding="utf-8").read()
    envelope = EnvelopeCodec.decode(text)
    assert EnvelopeCodec.accepts(envelope), path
    out[path] = {
        "decode + accepts": best(lambda: EnvelopeCodec.accepts(EnvelopeCodec.decode(text))),
        "encode": best(lambda: EnvelopeCodec.encode(envelope)),
    }
print(json.dumps(out))
"""


def fail(message):
    print(f"python_codec.py: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if argv else 2)
    options = {"binary": argv[0], "python": None, "repetitions": 3, "min_time": 0.3, "strict": False,
               "markdown": False}
    rest = argv[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in ("--strict", "--markdown"):
            options[arg[2:]] = True
        elif arg in ("--python", "--repetitions", "--min-time") and i + 1 < len(rest):
            key = arg[2:].replace("-", "_")
            options[key] = rest[i + 1] if key == "python" else float(rest[i + 1])
            i += 1
        else:
            fail(f"unknown argument {arg}")
        i += 1
    options["repetitions"] = int(options["repetitions"])
    return options


def ours(binary, directory, repetitions, min_time):
    subprocess.run([binary, f"--payloads_to={directory}"], check=True)
    command = [binary, "--benchmark_filter=BM_(Encode|DecodeAccept)/", "--benchmark_format=json",
               f"--benchmark_repetitions={repetitions}", f"--benchmark_min_time={min_time}",
               "--benchmark_report_aggregates_only=true"]
    done = subprocess.run(command, stdout=subprocess.PIPE, check=False)
    if done.returncode != 0:
        fail(f"{binary} exited with {done.returncode}")
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    times = {}
    for entry in json.loads(done.stdout)["benchmarks"]:
        if entry.get("aggregate_name", "median") == "median" and not entry.get("error_occurred"):
            name = entry.get("run_name", entry["name"])
            times[name] = entry["cpu_time"] * scale[entry.get("time_unit", "ns")]
    return times


def python_sdk(python, files, repetitions, min_time):
    if python is None:
        python = subprocess.run([os.path.join(HERE, "..", "scripts", "python-sdk"), "path"], stdout=subprocess.PIPE,
                                check=True, text=True).stdout.strip()
    done = subprocess.run([python, "-c", PYTHON_LOOP, str(min_time), str(repetitions), *files],
                          stdout=subprocess.PIPE, check=False, text=True)
    if done.returncode != 0:
        fail(f"the Python SDK's loop exited with {done.returncode}")
    return json.loads(done.stdout)


def fmt(seconds):
    for unit, scale in (("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def main(argv):
    options = parse_args(argv)
    measured = machine.describe(HERE)
    with tempfile.TemporaryDirectory() as directory:
        our_times = ours(options["binary"], directory, options["repetitions"], options["min_time"])
        files = [os.path.join(directory, f"{payload}.json") for payload in PAYLOADS]
        python_times = python_sdk(options["python"], files, options["repetitions"], options["min_time"])
    rows = []
    for operation, (benchmark, target) in TARGETS.items():
        for payload, path in zip(PAYLOADS, files):
            mine = our_times.get(f"{benchmark}/{payload}")
            if mine is None:
                fail(f"{benchmark}/{payload} did not run")
            theirs = python_times[path][operation]
            ratio = theirs / mine
            rows.append((operation, payload, theirs, mine, ratio, target, "PASS" if ratio >= target else "FAIL"))
    failed = sum(1 for row in rows if row[6] != "PASS")
    measured += f", load average {machine.load()} at the end"
    if options["markdown"]:
        print(f"{measured}; medians of {options['repetitions']} repetitions, CPU time:")
        print()
        print("| operation | payload | Python SDK | ours | ratio | target |")
        print("| --- | --- | ---: | ---: | ---: | --- |")
        for operation, payload, theirs, mine, ratio, target, verdict in rows:
            print(f"| {operation} | /{payload} | {fmt(theirs)} | {fmt(mine)} | {ratio:.1f}× | ≥ {target:g}× — {verdict} |")
    else:
        print(measured)
        print(f"{'operation':<18} {'payload':<8} {'Python SDK':>11} {'ours':>10} {'ratio':>8}  target  verdict")
        for operation, payload, theirs, mine, ratio, target, verdict in rows:
            print(f"{operation:<18} {payload:<8} {fmt(theirs):>11} {fmt(mine):>10} {ratio:>7.1f}x  >={target:g}x  "
                  f"{verdict}")
    return 1 if options["strict"] and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
