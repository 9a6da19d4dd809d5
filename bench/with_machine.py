#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a benchmark and prints its report as a block for the docs: a line
saying when, on which commit and on what machine it ran, then the report as
it printed it (bench/regenerate_docs.py puts it in place).

    bench/with_machine.py [--missed-status N] COMMAND [ARGS...]

--missed-status N: exit status N means the benchmark ran and reports a
missed target (the report is still the block), not that the run failed.

An argument @broker:NAME@ is replaced by the URL of the local broker NAME
(`scripts/broker url NAME`; start it first with `scripts/broker start NAME`).
"""
import os
import re
import subprocess
import sys

import machine

HERE = os.path.dirname(os.path.abspath(__file__))
BROKER = re.compile(r"@broker:([a-z0-9]+)@")


def broker_url(name):
    done = subprocess.run([os.path.join(HERE, "..", "scripts", "broker"), "url", name], capture_output=True,
                          text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        sys.exit(f"with_machine.py: no URL for broker {name}: {done.stderr.strip()}")
    return lines[-1]


def main(argv):
    missed = None
    if len(argv) >= 2 and argv[0] == "--missed-status":
        missed = int(argv[1])
        argv = argv[2:]
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    command = [BROKER.sub(lambda m: broker_url(m.group(1)), arg) for arg in argv]
    measured = machine.describe(HERE)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 and done.returncode != missed:
        print(done.stdout + done.stderr, file=sys.stderr)
        return 1
    print(f"{measured}, load average {machine.load()} at the end:")
    print()
    print("```text")
    print(done.stdout.rstrip("\n"))
    print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
