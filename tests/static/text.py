#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the tree's text promises a reader who has nothing but the tree.

- Every source file (C, C++, Rust, Python, shell, make, JavaScript, CSS,
  SQL, settings.def) carries the project's SPDX line in its first three
  lines.
- No file names an issue by its number: the tracker is not part
  of the tree, so the reason goes in the text itself.
- No file names a path of a developer's machine (/work/..., /home/NAME/
  other than the documents' example user "me").
- Every relative link of the AsciiDoc documents (link:FILE[...] and
  xref:FILE[...], with or without #anchor) names a file that exists.
- README.adoc stays a front page: at most README_MAX_LINES lines; the
  long chapters live under doc/.

Fails with one line per finding: FILE:LINE: what.

Usage: text.py"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SPDX = "SPDX-License-Identifier: LGPL-2.1-or-later"
SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".rs", ".py", ".sh", ".mk", ".js", ".css", ".sql", ".def")
SOURCE_NAMES = ("Makefile", ".ci/run", "debian/rules", "cli/memtrace.bash-completion")
# Files whose text is not the project's: the licence itself.
FOREIGN = ("LICENSE",)
ISSUE = re.compile(r"\bissues?\s+#?[0-9]+", re.IGNORECASE)
MACHINE_PATH = re.compile(r"(?<![\w.])/(work|wt)/|/home/(?!me/)[a-z]")
README_MAX_LINES = 350
LINK = re.compile(r"\b(?:link|xref):([^\s\[\]:]+?)(?:#[^\s\[\]]*)?\[")


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split("\n") if f]


def is_source(path):
    return path.endswith(SOURCE_SUFFIXES) or path in SOURCE_NAMES


def main():
    findings = []
    for path in tracked():
        if path in FOREIGN:
            continue
        full = os.path.join(ROOT, path)
        try:
            with open(full, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        if is_source(path) and not any(SPDX in line for line in lines[:3]):
            findings.append(f"{path}:1: no '{SPDX}' line in the first three lines")
        for number, line in enumerate(lines, 1):
            if ISSUE.search(line):
                findings.append(f"{path}:{number}: names an issue by number: {line.strip()}")
            if MACHINE_PATH.search(line) and not path.startswith("tests/static/"):
                findings.append(f"{path}:{number}: names a developer machine's path: {line.strip()}")
            if path.endswith(".adoc"):
                for target in LINK.findall(line):
                    if re.match(r"[a-z]+://", target) or target.startswith(("mailto", "/")):
                        continue
                    where = os.path.normpath(os.path.join(os.path.dirname(full), target))
                    if not os.path.exists(where):
                        findings.append(f"{path}:{number}: link to {target}, which does not exist")
    with open(os.path.join(ROOT, "README.adoc"), encoding="utf-8") as f:
        readme_lines = len(f.read().splitlines())
    if readme_lines > README_MAX_LINES:
        findings.append(f"README.adoc:{README_MAX_LINES + 1}: {readme_lines} lines, more than "
                        f"{README_MAX_LINES}: move a long chapter under doc/")
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
