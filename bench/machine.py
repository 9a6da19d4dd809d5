# SPDX-License-Identifier: Apache-2.0
"""When and where a benchmark ran, for the line above its table in the docs:
the date, the commit, the CPU and cores, the compiler and the load average."""

import datetime
import os
import platform
import subprocess


def _first_line(command):
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.splitlines()[0].strip() if done.returncode == 0 and done.stdout else ""


def cpu():
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model or platform.processor() or platform.machine()}"


def load():
    try:
        return "%.2f" % os.getloadavg()[0]
    except OSError:
        return "?"


def describe(source_dir="."):
    """One sentence: date, commit, machine, compiler, load average now."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = _first_line(["git", "-C", source_dir, "rev-parse", "--short", "HEAD"]) or "?"
    dirty = _first_line(["git", "-C", source_dir, "status", "--porcelain", "--untracked-files=no"])
    compiler = _first_line(["c++", "--version"]) or "?"
    return (f"Measured {now}, commit {commit}{' with local changes' if dirty else ''}, on "
            f"{platform.system()} {platform.machine()} ({cpu()}), {compiler}, load average {load()} at the start")
