#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every source, script and build file of the project says its license.

    tests/license/check_spdx.py SOURCE_DIR LICENSE_ID

The files are those git tracks under SOURCE_DIR (every file below it, apart
from build directories, when it is not a git checkout). A C++, Java, CMake,
shell or Python file, a CMake or pkg-config template and any file starting
with "#!" must carry "SPDX-License-Identifier: LICENSE_ID" in its first three
lines (after the shebang, if any). LICENSE must be that license's text.
Prints each file that does not, and "N files checked, N without the line".
"""

import pathlib
import subprocess
import sys

# What counts as source: the suffixes, and the file names without one.
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".java", ".cmake", ".sh", ".py", ".in"}
SOURCE_NAMES = {"CMakeLists.txt"}
# The first line of each license's text, for the LICENSE file.
LICENSE_TITLES = {"Apache-2.0": "Apache License"}


def tracked_files(root: pathlib.Path) -> list[pathlib.Path]:
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
        return [root / name for name in listed.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = ("build", ".git")
        return [p for p in root.rglob("*") if p.is_file() and not p.relative_to(root).parts[0].startswith(skip)]


def is_source(path: pathlib.Path) -> bool:
    if path.name in SOURCE_NAMES or path.suffix in SOURCE_SUFFIXES:
        return True
    with path.open("rb") as f:
        return f.read(2) == b"#!"


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    license_id = sys.argv[2]
    wanted = f"SPDX-License-Identifier: {license_id}"
    failures = 0
    license_file = root / "LICENSE"
    title = LICENSE_TITLES.get(license_id)
    if not license_file.is_file() or title is None or title not in license_file.read_text()[:400]:
        print(f"LICENSE: not the text of {license_id}")
        failures += 1
    checked = 0
    for path in sorted(tracked_files(root)):
        if not path.is_file() or not is_source(path):
            continue
        checked += 1
        head = path.read_text(errors="replace").splitlines()[:3]
        if not any(wanted in line for line in head):
            print(f"{path.relative_to(root)}: no '{wanted}' in its first lines")
            failures += 1
    print(f"{checked} files checked, {failures} without the line")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
