#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The chart's ten bands on a g++ compile (cc1plus -O1 on bench/templates.cpp,
# as `make bench` runs it): every distinct full stack a band, they held 46%
# of the peak and "other" the rest; grouped by the names the page shows
# (doc/timeline.adoc, "Sites on the page") they hold most of it. Read
# from the page as headless Chromium drew it: the bands' bytes at the peak
# (their data-peak; the peak is a moment between two samples) against the
# peak's. Prints the share, and the same at the sample nearest the peak.
# Prints "answers_page_bands: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_SAMPLE \
    MEMTRACE_LIB MEMTRACE_RECORD_CULL_MS
cd "$work" || exit 1

browser=$(command -v chromium || command -v chromium-browser)
cc1plus=$(g++ -print-prog-name=cc1plus)
if [ -z "$browser" ] || [ ! -x "$cc1plus" ]; then
    fail "chromium and cc1plus" "not installed (make deps)"
    finish answers_page_bands
    exit 1
fi
timeout 300 env MEMTRACE_RECORD="$work/gxx.rec" LD_PRELOAD="$build/libmemtrace.so" \
    "$cc1plus" -quiet -imultiarch x86_64-linux-gnu -D_GNU_SOURCE -O1 "$root/bench/templates.cpp" \
    -o /dev/null >/dev/null 2>gxx.err
check "g++ compile recorded: status" "0" "$?"
timeout 300 "$memtrace" view gxx.rec -o gxx.html >view.out 2>&1
check "view: its one line" "memtrace: view: gxx.html written" "$(cat view.out)"
timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/chrome" \
    --dump-dom "file://$work/gxx.html" >gxx.dom 2>/dev/null
read -r peak atpeak bands total < <(python3 "$root/tests/e2e/answers_page_dom.py" share gxx.dom)
pct() { awk -v b="${1:-0}" -v t="${2:-0}" 'BEGIN { printf "%.1f", t ? 100 * b / t : 0 }'; }
share=$(pct "$atpeak" "$peak")
echo "the ten bands: $atpeak of $peak bytes at the peak ($share%);" \
    "$bands of $total at the sample nearest it ($(pct "$bands" "$total")%)"
if awk -v s="$share" 'BEGIN { exit !(s > 50) }'; then
    pass "the ten bands hold most of the peak ($share%)"
else
    fail "the ten bands hold most of the peak" "$share% ($atpeak of $peak bytes)"
fi
finish answers_page_bands
