# Sourced by the e2e scripts: paths, a scratch directory removed at exit,
# PASS/FAIL counting and the SITE: marker lookup. A script ends with
# `finish NAME`, which prints "NAME: N passed, N failed" and fails if any did.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build
tests=$build/tests
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

# Line of the marker "SITE:NAME" (followed by a space or the end of the line)
# in FILE, a path absolute or relative to the project root.
site_line() {
    local file=$1
    [ "${file#/}" = "$file" ] && file=$root/$file
    grep -nE "SITE:$2( |\$)" "$file" | head -1 | cut -d: -f1
}

finish() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" = 0 ]
}
