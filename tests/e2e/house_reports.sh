#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The reports' files hold what their names say (doc/design.adoc, "Which
# report is which"):
#  - every module of src/profile/, src/report/ and src/leak/ whose name says
#    "report" or "reporter" has its word in the design's glossary, so a
#    new meaning of the word cannot come in unnamed;
#  - every file the glossary names exists, and every function it names (or
#    prefix, NAME_*) is defined by an object of the built libraries;
#  - no .c file of src/profile/ or src/report/ is a micro-file (under 40
#    lines): such a file is folded into its user.
# Prints "house_reports: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
design=$root/doc/design.adoc
cd "$root" || exit 1

# The glossary: from its title to the end of its table.
awk '/^=== Which report is which/ { on = 1 } on { print } on && /^\|===$/ && ++n == 2 { exit }' \
    "$design" >"$work/glossary"
check "the design has the glossary, its table closed" 2 "$(grep -c '^|===$' "$work/glossary")"

missing=
for f in src/profile/*report* src/report/*report* src/leak/*report*; do
    [ -e "$f" ] || continue
    m=${f#src/}
    m=${m%.[ch]} # a module: its .c or its .h named
    grep -q "\`$m\.[ch]\`" "$work/glossary" || missing="$missing ${f#src/}"
done
check "every report file has its word in the glossary" "" "${missing# }"

missing=
for f in $(grep -o '`[a-z_]*/[a-z_]*\.[ch]`' "$work/glossary" | tr -d '`' | sort -u); do
    [ -e "src/$f" ] || missing="$missing $f"
done
check "every file the glossary names exists" "" "${missing# }"

# Defined functions of both builds' objects (hidden, but in the symbol table).
nm --defined-only "$build"/tracer/*/*.o "$build"/profiler/*/*.o 2>/dev/null |
    awk '$2 ~ /^[TDB]$/ { print $3 }' | sort -u >"$work/defined"
check "the built objects are there" 1 "$([ -s "$work/defined" ] && echo 1)"
missing=
for fn in $(grep -o '`mt_[a-z_]*\*\{0,1\}`' "$work/glossary" | tr -d '`' | sort -u); do
    case $fn in
    *_\*) grep -q "^${fn%\*}" "$work/defined" || missing="$missing $fn" ;;
    *) grep -qx "$fn" "$work/defined" || missing="$missing $fn" ;;
    esac
done
check "every function the glossary names is defined" "" "${missing# }"

small=
for f in src/profile/*.c src/report/*.c; do
    [ "$(wc -l <"$f")" -lt 40 ] && small="$small $f($(wc -l <"$f"))"
done
check "no micro-file (under 40 lines) in src/profile or src/report" "" "${small# }"

finish house_reports
