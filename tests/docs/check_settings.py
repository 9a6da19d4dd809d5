#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that the scripts and the docs name the same environment settings.

    tests/docs/check_settings.py SOURCE_DIR

A setting is a BQ_* variable a script of the project reads from the
environment: in a shell expansion with a default (":-", ":=" or "-"),
through scripts/lib's bq_port_default, or from os.environ / getenv in a
helper, test or benchmark. Every setting must be named in README.md or docs/; every BQ_* name
the docs give must be such a setting, or a variable the C++ programs set for
the commands they run (babelqueue work: "BQ_URN"...). Variables a script sets
for itself are not settings and must not look like them to a reader of the
docs. Prints each disagreement and "N settings, N documented names, N
disagreements".
"""

import pathlib
import re
import sys

SCRIPT_DIRS = ["scripts", "fuzz", "bench", ".ci", "tests"]
SCRIPT_SUFFIXES = {".sh", ".py", ".java", ".cpp", ".hpp", ""}
SETTING_READS = [
    re.compile(r"\$\{(BQ_[A-Z0-9_]+)(?::-|:=|-)"),
    re.compile(r"bq_port_default\s+(BQ_[A-Z0-9_]+)"),
    re.compile(r"environ(?:\.get\(|\[)\s*[\"'](BQ_[A-Z0-9_]+)"),
    re.compile(r"getenv\(\s*\"(BQ_[A-Z0-9_]+)"),
]
NAME = re.compile(r"\bBQ_[A-Z0-9_]+\b")
SET_BY_PROGRAMS = re.compile(r"\"(BQ_[A-Z0-9_]+)")


def files_under(root: pathlib.Path, folders, suffixes):
    for folder in folders:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in suffixes:
                yield path


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    settings = {}  # name -> first file reading it
    for path in files_under(root, SCRIPT_DIRS, SCRIPT_SUFFIXES):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if path.suffix == "" and not text.startswith("#!"):
            continue
        for pattern in SETTING_READS:
            for name in pattern.findall(text):
                settings.setdefault(name, path.relative_to(root))
    set_by_programs = set()
    for path in files_under(root, ["tools", "src"], {".cpp", ".hpp"}):
        set_by_programs.update(SET_BY_PROGRAMS.findall(path.read_text()))
    documented = {}  # name -> first doc naming it
    for path in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for name in NAME.findall(path.read_text()):
            documented.setdefault(name, path.relative_to(root))

    disagreements = 0
    for name, path in sorted(settings.items()):
        if name not in documented:
            print(f"{path} reads {name} from the environment, but README.md and docs/ do not name it")
            disagreements += 1
    for name, path in sorted(documented.items()):
        if name not in settings and name not in set_by_programs:
            print(f"{path} names {name}, but no script reads it from the environment and no program sets it")
            disagreements += 1
    print(f"{len(settings)} settings, {len(documented)} documented names, {disagreements} disagreements")
    return 1 if disagreements or not settings else 0


if __name__ == "__main__":
    sys.exit(main())
