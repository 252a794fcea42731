#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The C and C++ sources are laid out as .clang-format says.

Every C and C++ file git tracks under ROOTS, but those EXCLUDED names (a
path, or a folder ending in "/"), is what clang-format makes of it. The
.clang-format was tuned for clang-format 14 (Debian 12's); another major
version lays some constructs out differently, so another one is refused
rather than reported as a difference. An EXCLUDED name that matches no
file fails too, so that the list follows renames.

Fails with one line per file that differs: FILE: N lines differ.

Usage: format.py [--write]   (--write: rewrite the files; make format)
       CLANG_FORMAT=PATH names the program (default clang-format)."""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ROOTS = ("src/", "tools/", "include/", "tests/unit/", "tests/progs/")
SUFFIXES = (".c", ".h", ".cpp")
VERSION = 14
# Laid out by hand, each for a reason a formatter cannot see.
EXCLUDED = {
    "tests/progs/": "the e2e tests' programs: their SITE: markers and the lines and columns "
                    "of their calls are what the tests assert (against gdb, addr2line, "
                    "llvm-symbolizer); a layout change moves what is tested",
}


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *ROOTS],
                         capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split("\n") if f.endswith(SUFFIXES)]


def excluded(path):
    return any(path == e or (e.endswith("/") and path.startswith(e)) for e in EXCLUDED)


def main():
    program = os.environ.get("CLANG_FORMAT", "clang-format")
    try:
        version = subprocess.run([program, "--version"], capture_output=True, text=True,
                                 check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        print(f"format: no {program} (apt-get install clang-format)")
        return 1
    m = re.search(r"version (\d+)\.", version)
    if not m or int(m.group(1)) != VERSION:
        print(f"format: {program} is not clang-format {VERSION}, which .clang-format is "
              f"tuned for: {version.strip()}")
        return 1
    files = tracked()
    problems = []
    for e in EXCLUDED:
        if not any(f == e or (e.endswith("/") and f.startswith(e)) for f in files):
            problems.append(f"format.py: EXCLUDED names {e}, which matches no file")
    checked = [f for f in files if not excluded(f)]
    style = "--style=file:" + os.path.join(ROOT, ".clang-format")
    if "--write" in sys.argv[1:]:
        subprocess.run([program, "-i", style, *checked], cwd=ROOT, check=True)
        print(f"format: {len(checked)} files laid out")
        return 1 if problems else 0
    # One clang-format for every file, on copies: a process a file is slow.
    with tempfile.TemporaryDirectory() as tmp:
        for f in checked:
            os.makedirs(os.path.join(tmp, os.path.dirname(f)), exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, f), os.path.join(tmp, f))
        subprocess.run([program, "-i", style, *checked], cwd=tmp, check=True)
        for f in checked:
            with open(os.path.join(ROOT, f), encoding="utf-8") as a, \
                    open(os.path.join(tmp, f), encoding="utf-8") as b:
                old, new = a.read().split("\n"), b.read().split("\n")
            if old != new:
                n = sum(1 for line in difflib.unified_diff(old, new, n=0, lineterm="")
                        if line.startswith("-") and not line.startswith("---"))
                problems.append(f"{f}: {n} lines differ from clang-format's layout (make format)")
    for p in problems:
        print(p)
    print(f"format: {len(checked)} files checked, {len(files) - len(checked)} excluded, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
