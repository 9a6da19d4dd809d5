#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compiles the code samples of README.md and docs/ against an installed package.

    tests/docs/check_samples.py SOURCE_DIR PREFIX [--work DIR] [--list]

Every ```cpp, ```c++ and ```cmake block of README.md and docs/**/*.md must be
preceded, on the line just above its fence, by a marker saying how it is
checked (docs/examples.md, "The samples of the documentation"):

    <!-- sample: program [components=core,sqlite] [expect="text"] -->
        a whole program: built with -Wall -Werror against the package at
        PREFIX (find_package(BabelQueue COMPONENTS ...)), then run in an empty
        directory; it must exit 0 and, with expect, print text.
    <!-- sample: fragment [components=...] [context=FILE] -->
        statements: its #include lines (first) stay at file scope, FILE (from
        SOURCE_DIR) is included after them for names the fragment assumes,
        the rest becomes the body of main(). Built like a program, not run.
    <!-- sample: cmake [components=...] -->
        a CMakeLists.txt body: a project is configured and built from it
        against PREFIX; it links `app` (a stub program added when the block
        defines no executable) or the executables it defines (stubs).
    <!-- sample: excerpt of=FILE -->
        lines copied from FILE (in SOURCE_DIR): each line of the block, apart
        from "...", must be a line of FILE, in the same order.

A sample needing a component PREFIX does not have is skipped. The last line
is "N passed, N failed, N skipped"; the exit status is 1 when anything failed.
"""

import argparse
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

CHECKED_LANGUAGES = {"cpp", "c++", "cmake"}
KINDS = {"program", "fragment", "cmake", "excerpt"}
MARKER = re.compile(r"^<!--\s*sample:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```\s*([A-Za-z0-9+_-]*)\s*$")
RUN_TIMEOUT = 60


class Sample:
    def __init__(self, path, line, language, marker, code):
        self.path = path  # relative to the source dir
        self.line = line  # 1-based line of the first line of code
        self.language = language
        self.code = code  # list of lines
        self.name = f"sample_{path.replace('/', '_').replace('.', '_').replace('-', '_')}_{line}"
        words = shlex.split(marker)
        self.kind = words[0] if words else ""
        self.options = {}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep:
                raise ValueError(f"'{word}' is not key=value")
            self.options[key] = value
        if self.kind not in KINDS:
            raise ValueError(f"unknown sample kind '{self.kind}' (known: {', '.join(sorted(KINDS))})")
        known = {"program": {"components", "expect"}, "fragment": {"components", "context"},
                 "cmake": {"components"}, "excerpt": {"of"}}[self.kind]
        unknown = set(self.options) - known
        if unknown:
            raise ValueError(f"a {self.kind} sample takes no {', '.join(sorted(unknown))}")
        if (self.kind == "cmake") != (language == "cmake") and self.kind != "excerpt":
            raise ValueError(f"a {self.kind} sample cannot be a {language} block")
        if self.kind == "excerpt" and "of" not in self.options:
            raise ValueError("an excerpt names its file: of=FILE")
        self.components = ["core"] + [c for c in self.options.get("components", "").split(",") if c and c != "core"]

    def where(self):
        return f"{self.path}:{self.line}"


def find_samples(source_dir):
    """The checked blocks of README.md and docs/, and the errors of their markers."""
    files = [source_dir / "README.md"] + sorted((source_dir / "docs").rglob("*.md"))
    samples, errors = [], []
    for file in files:
        relative = file.relative_to(source_dir).as_posix()
        lines = file.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            fence = FENCE.match(lines[index])
            if not fence:
                index += 1
                continue
            language = fence.group(1).lower()
            end = index + 1
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            marker = MARKER.match(lines[index - 1]) if index > 0 else None
            where = f"{relative}:{index + 1}"
            if language in CHECKED_LANGUAGES and not marker:
                errors.append(f"{where}: a {language} block without a <!-- sample: ... --> marker on the line above")
            elif marker and language not in CHECKED_LANGUAGES:
                errors.append(f"{where}: a sample marker above a block that is not cpp or cmake")
            elif marker:
                try:
                    samples.append(Sample(relative, index + 2, language, marker.group(1), lines[index + 1:end]))
                except ValueError as error:
                    errors.append(f"{where}: {error}")
            index = end + 1
    return samples, errors


def installed_components(prefix):
    components = set()
    for targets in prefix.rglob("BabelQueue-*-targets.cmake"):
        components.add(targets.name[len("BabelQueue-"):-len("-targets.cmake")])
    return components


def line_directive(sample, offset=0):
    return f'#line {sample.line + offset} "{sample.path}"'


def cpp_source(sample, source_dir):
    """The translation unit of a program or fragment sample."""
    if sample.kind == "program":
        return "\n".join([line_directive(sample)] + sample.code) + "\n"
    includes = 0
    while includes < len(sample.code) and (sample.code[includes].startswith("#include") or not sample.code[includes].strip()):
        includes += 1
    body = sample.code[includes:]
    if any(line.startswith("#include") for line in body):
        raise ValueError("a fragment's #include lines come first")
    context = sample.options.get("context")
    lines = [line_directive(sample)] + sample.code[:includes]
    if context:
        if not (source_dir / context).is_file():
            raise ValueError(f"context={context} does not exist")
        lines.append(f'#include "{context}"')
    lines += ["int main() {", line_directive(sample, includes)] + body + ["}"]
    return "\n".join(lines) + "\n"


def cmake_command(prefix):
    command = ["cmake", f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Debug"]
    if shutil.which("ninja"):
        command += ["-G", "Ninja"]
    if shutil.which("ccache"):
        command.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    return command


def run(command, cwd=None, timeout=None):
    return subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)


def check_cpp(samples, source_dir, prefix, work):
    """Builds every program and fragment in one project; runs the programs."""
    results = {}
    if not samples:
        return results
    project = work / "cpp"
    project.mkdir()
    components = sorted({c for sample in samples for c in sample.components})
    cmake = [
        "cmake_minimum_required(VERSION 3.25)",
        "project(babelqueue_doc_samples LANGUAGES CXX)",
        f"find_package(BabelQueue REQUIRED COMPONENTS {' '.join(components)})",
    ]
    built = []
    for sample in samples:
        try:
            (project / f"{sample.name}.cpp").write_text(cpp_source(sample, source_dir), encoding="utf-8")
        except ValueError as error:
            results[sample] = (False, str(error))
            continue
        libraries = " ".join(f"babelqueue::{c}" for c in sample.components)
        cmake += [
            f"add_executable({sample.name} {sample.name}.cpp)",
            f"target_compile_options({sample.name} PRIVATE -Wall -Werror)",
            f"target_link_libraries({sample.name} PRIVATE {libraries})",
        ]
        if "context" in sample.options:  # the context file's own #includes are from the source dir
            cmake.append(f'target_include_directories({sample.name} PRIVATE "{source_dir}")')
        built.append(sample)
    (project / "CMakeLists.txt").write_text("\n".join(cmake) + "\n", encoding="utf-8")
    configured = run(cmake_command(prefix) + ["-S", str(project), "-B", str(project / "build")])
    if configured.returncode != 0:
        for sample in built:
            results[sample] = (False, "the samples project does not configure:\n" + configured.stdout)
        return results
    # Keep going past a failing sample, then ask each one's output about it.
    run(["cmake", "--build", str(project / "build"), "-j", "2", "--"] + (["-k", "0"] if shutil.which("ninja") else ["-k"]))
    for sample in built:
        binary = project / "build" / sample.name
        if not binary.exists():
            # Built again alone, for its own compiler output.
            again = run(["cmake", "--build", str(project / "build"), "--target", sample.name])
            results[sample] = (False, "does not build:\n" + again.stdout)
            continue
        if sample.kind == "fragment":
            results[sample] = (True, "builds")
            continue
        with tempfile.TemporaryDirectory(dir=work) as directory:
            try:
                ran = run([str(binary)], cwd=directory, timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                results[sample] = (False, f"builds, but runs longer than {RUN_TIMEOUT} s")
                continue
        expect = sample.options.get("expect")
        if ran.returncode != 0:
            results[sample] = (False, f"builds, but exits {ran.returncode}:\n{ran.stdout}")
        elif expect and expect not in ran.stdout:
            results[sample] = (False, f"builds and runs, but does not print '{expect}':\n{ran.stdout}")
        else:
            results[sample] = (True, "builds and runs" + (f", prints '{expect}'" if expect else ""))
    return results


def check_cmake(sample, prefix, work):
    project = work / sample.name
    project.mkdir()
    body = "\n".join(sample.code)
    lines = ["cmake_minimum_required(VERSION 3.25)", "project(babelqueue_doc_sample LANGUAGES CXX)"]
    executables = re.findall(r"add_executable\(\s*([^\s)]+)([^)]*)\)", body)
    if not executables:
        lines.append("add_executable(app app.cpp)")
        executables = [("app", " app.cpp")]
    for _, sources in executables:
        for source in sources.split():
            (project / source).write_text("int main() { return 0; }\n", encoding="utf-8")
    (project / "CMakeLists.txt").write_text("\n".join(lines) + "\n" + body + "\n", encoding="utf-8")
    configured = run(cmake_command(prefix) + ["-S", str(project), "-B", str(project / "build")])
    if configured.returncode != 0:
        return False, "does not configure:\n" + configured.stdout
    build = run(["cmake", "--build", str(project / "build")])
    if build.returncode != 0:
        return False, "configures, but does not build:\n" + build.stdout
    return True, "configures and builds"


def check_excerpt(sample, source_dir):
    file = source_dir / sample.options["of"]
    if not file.is_file():
        return False, f"of={sample.options['of']} does not exist"
    lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
    position = 0
    for line in sample.code:
        wanted = line.strip()
        if wanted in ("", "..."):
            continue
        try:
            position = lines.index(wanted, position) + 1
        except ValueError:
            return False, f"'{wanted}' is not a line of {sample.options['of']} (after the lines before it)"
    return True, f"is in {sample.options['of']}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source_dir", type=pathlib.Path)
    parser.add_argument("prefix", type=pathlib.Path, help="an installed BabelQueue")
    parser.add_argument("--work", type=pathlib.Path, help="keep the generated projects here")
    parser.add_argument("--list", action="store_true", help="only list the samples and check their markers")
    args = parser.parse_args()
    source_dir = args.source_dir.resolve()

    samples, errors = find_samples(source_dir)
    failed = len(errors)
    for error in errors:
        print(f"FAIL - {error}")
    if args.list:
        for sample in samples:
            print(f"{sample.where()}: {sample.kind} {' '.join(sample.components)}")
        return 1 if failed else 0

    prefix = args.prefix.resolve()
    available = installed_components(prefix)
    if "core" not in available:
        print(f"FAIL - no installed BabelQueue at {prefix}")
        return 1
    runnable, skipped = [], []
    for sample in samples:
        missing = [c for c in sample.components if c not in available]
        (skipped if missing and sample.kind != "excerpt" else runnable).append(sample)
        if missing and sample.kind != "excerpt":
            print(f"skip - {sample.where()} {sample.kind}: needs {', '.join(missing)}, not installed")

    if args.work:
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        work_dir, cleanup = args.work.resolve(), None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="bq-doc-samples-")
        work_dir = pathlib.Path(cleanup.name)

    results = check_cpp([s for s in runnable if s.kind in ("program", "fragment")], source_dir, prefix, work_dir)
    for sample in runnable:
        if sample.kind == "cmake":
            results[sample] = check_cmake(sample, prefix, work_dir)
        elif sample.kind == "excerpt":
            results[sample] = check_excerpt(sample, source_dir)

    passed = 0
    for sample in runnable:
        ok, detail = results[sample]
        first, _, rest = detail.partition("\n")
        print(f"{'ok  ' if ok else 'FAIL'} - {sample.where()} {sample.kind}: {first}")
        if rest:
            print("\n".join("    " + line for line in rest.splitlines()))
        passed += ok
        failed += not ok
    if cleanup:
        cleanup.cleanup()
    print(f"{passed} passed, {failed} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
