#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every reference in README.md and docs/ points at something that exists:

- relative links, [text](path#anchor): the file or directory, and the
  heading the anchor names (GitHub's slugs);
- repository paths named in the text, in code spans (`src/core/url.cpp`,
  `tests/support/`) or in prose (docs/robustness.md): the file or directory;
- ADR numbers (ADR-0015, ADR 0015, adr/0015-...): a record in docs/adr/,
  unless the text says it is the family's (the BabelQueue specification's
  ADRs have numbers of their own: "the family's ADR-0026").

    check_references.py SOURCE_DIR      check the repository
    check_references.py --self-test     check that broken references are found
"""
import os
import re
import sys
import tempfile

TOP_DIRS = ("src", "include", "tests", "tools", "bench", "scripts", "docs", "examples", "cmake", "fuzz", ".ci")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"^(?:%s)/[A-Za-z0-9_.+/-]*$" % "|".join(re.escape(d) for d in TOP_DIRS))
PROSE_PATH = re.compile(r"(?<![\w/.-])((?:%s)/[A-Za-z0-9_.+/-]*\.(?:md|hpp|cpp|h|sh|py|txt|cmake|json|in))\b"
                        % "|".join(re.escape(d) for d in TOP_DIRS))
PLACEHOLDER = re.compile(r"(^|[/_.-])[A-Z][A-Z0-9_]+($|[/_.-])")  # NAME, BUILD_DIR: not a real path
ADR = re.compile(r"\bADR[- ]?(\d{4})\b|\badr/(\d{4})-")
FAMILY = re.compile(r"family|specification|SPEC", re.IGNORECASE)
FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_files(root):
    files = [os.path.join(root, "README.md")]
    for directory, _, names in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(directory, n) for n in sorted(names) if n.endswith(".md")]
    return [f for f in files if os.path.isfile(f)]


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        counts = {}
        in_fence = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m and not in_fence:
                    base = slug(m.group(1))
                    n = counts.get(base, 0)
                    counts[base] = n + 1
                    found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def prose_and_code(path):
    """(line number, text outside fences, in fence?) for each line."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            yield number, line, in_fence


def check(root):
    problems = []
    adrs = {m.group(1) for n in os.listdir(os.path.join(root, "docs", "adr"))
            for m in [re.match(r"^(\d{4})-.*\.md$", n)] if m}
    for path in markdown_files(root):
        where_dir = os.path.dirname(path)
        shown = os.path.relpath(path, root)
        for number, line, in_fence in prose_and_code(path):
            at = f"{shown}:{number}"
            if not in_fence:
                for m in LINK.finditer(line):
                    target = m.group(1)
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                        continue
                    file_part, _, anchor = target.partition("#")
                    resolved = os.path.normpath(os.path.join(where_dir, file_part)) if file_part else path
                    if not os.path.exists(resolved):
                        problems.append(f"{at}: link to {target}: no such file or directory")
                        continue
                    if anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                        problems.append(f"{at}: link to {target}: {os.path.relpath(resolved, root)} "
                                        f"has no heading #{anchor}")
                paths = [m.group(1) for m in CODE_SPAN.finditer(line)]
                paths = [p for p in paths if REPO_PATH.match(p)]
                paths += [m.group(1) for m in PROSE_PATH.finditer(CODE_SPAN.sub("", LINK.sub("", line)))]
                for named in paths:
                    if PLACEHOLDER.search(named):
                        continue
                    if not os.path.exists(os.path.join(root, named.rstrip("/"))):
                        problems.append(f"{at}: names {named}, which does not exist")
            for m in ADR.finditer(line):
                number_text = m.group(1) or m.group(2)
                before = line[max(0, m.start() - 80):m.start()]
                if m.group(1) and FAMILY.search(before):
                    continue  # the family's ADR, not one of this repository's
                if number_text not in adrs:
                    problems.append(f"{at}: ADR {number_text} is not in docs/adr/ (if it is the family's, "
                                    f"say so: \"the family's ADR-{number_text}\")")
    return problems


def self_test():
    """The checker finds each kind of broken reference, and passes good ones."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs", "adr"))
        os.makedirs(os.path.join(root, "src", "core"))
        open(os.path.join(root, "src", "core", "real.cpp"), "w").close()
        with open(os.path.join(root, "docs", "adr", "0001-first.md"), "w") as f:
            f.write("# ADR 0001: first\n")
        with open(os.path.join(root, "docs", "guide.md"), "w") as f:
            f.write("# Guide\n\n## The `peek` command\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("[ok](docs/guide.md#the-peek-command) `src/core/real.cpp` ADR 0001 "
                    "the family's ADR-0026 `src/NAME/x.cpp`\n"
                    "[gone](docs/missing.md)\n[bad anchor](docs/guide.md#nowhere)\n"
                    "`tools/babelqueue/transports.cpp`\nsee docs/absent.md\nADR-0027 says\n"
                    "```\n[not a link](nowhere.md)\n```\n")
        problems = check(root)
    expected = ["README.md:2: link to docs/missing.md", "README.md:3: link to docs/guide.md#nowhere",
                "README.md:4: names tools/babelqueue/transports.cpp", "README.md:5: names docs/absent.md",
                "README.md:6: ADR 0027"]
    missed = [e for e in expected if not any(p.startswith(e) for p in problems)]
    extra = [p for p in problems if not any(p.startswith(e) for e in expected)]
    for text in missed:
        print(f"FAIL self-test: not found: {text}")
    for text in extra:
        print(f"FAIL self-test: reported wrongly: {text}")
    print(f"self-test: {len(expected) - len(missed)} of {len(expected)} broken references found, "
          f"{len(extra)} false reports")
    return 1 if missed or extra else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1])
    problems = check(root)
    for problem in problems:
        print(problem)
    print(f"{len(markdown_files(root))} files checked, {len(problems)} broken references")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
