#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The status line of the CLI on a real terminal (a pseudo-terminal): drawn
when standard output goes elsewhere, never when the command's own output
shares the terminal (it would be overwritten mid-line).

    progress_test.py BABELQUEUE
"""
import os
import pty
import subprocess
import sys
import tempfile

ERASE = b"\r\x1b[K"  # how the status line is drawn and erased
failures = 0
passed = 0


def check(name, expected, actual):
    global failures, passed
    if expected == actual:
        passed += 1
    else:
        failures += 1
        print(f"FAIL {name}\n  expected: {expected!r}\n  actual:   {actual!r}")


def run(argv, stdout_on_terminal):
    """Runs argv with standard error on a pseudo-terminal, standard output on
    the same one or on a pipe; returns (exit status, terminal bytes, stdout)."""
    main, side = pty.openpty()
    stdout = side if stdout_on_terminal else subprocess.PIPE
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=side)
    os.close(side)
    terminal = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO once the child closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    piped = child.stdout.read() if child.stdout else b""
    os.close(main)
    return child.wait(), terminal, piped


def main():
    bq = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite://{tmp}/q.db"
        # drain waits a whole second for nothing: the status is due at 250 ms.
        status, terminal, piped = run([bq, "--url", url, "drain", "empty", "--wait", "1"], False)
        check("drain, stdout piped: exit", 0, status)
        check("drain, stdout piped: the status line is drawn", True, b"drain empty: 0 messages" in terminal)
        check("drain, stdout piped: and erased at the end", True, terminal.endswith(ERASE))
        status, terminal, _ = run([bq, "--url", url, "drain", "empty", "--wait", "1"], True)
        check("drain, stdout on the terminal: exit", 0, status)
        check("drain, stdout on the terminal: no status line", b"", terminal)

        # publish prints ids while it runs: they must come out whole, one per line.
        count = 60000
        status, terminal, _ = run([bq, "--url", url, "publish", "ids", "urn:a", "{}", "--count", str(count)], True)
        check("publish --count, stdout on the terminal: exit", 0, status)
        check("publish --count, stdout on the terminal: no status line", False, ERASE in terminal)
        lines = terminal.split(b"\r\n")
        check("publish --count: every id on a line of its own", count, sum(1 for line in lines if len(line) == 36))
        check("publish --count: nothing else", [b""], [line for line in lines if len(line) != 36])

        # bench writes to standard output only at the end: the status shows
        # while it runs, and is gone before the report is printed. The status
        # is first drawn after 250 ms: the run must last well beyond that
        # (20 000 messages once finished before it).
        status, terminal, _ = run([bq, "--url", url, "bench", "b", "--messages", "200000", "--json"], True)
        check("bench, stdout on the terminal: exit", 0, status)
        check("bench: the status line was drawn", True, b"bench: " in terminal)
        report = terminal.rsplit(ERASE, 1)[-1]
        check("bench: the report comes after the status line, whole", True,
              report.startswith(b'{"transport":"sqlite"') and report.endswith(b"}\r\n"))
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
