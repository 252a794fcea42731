#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A sampled recording says so: MEMTRACE_SAMPLE with
# MEMTRACE_RECORD records only the sampled blocks, so every figure of the
# recording is a fraction of the run's. tests/progs/trust_sampled_hold holds
# 4,000 blocks of 4 KiB, recorded sampled (one in 65,536 bytes) and not:
#  - the run's closing recording line says "sampled: one allocation in
#    65536 bytes", the unsampled one does not;
#  - the JSON's sample_rate is 65536, and 0 unsampled (a recording without
#    the R record, as every recording from before it);
#  - memtrace export says it on one line; --heaptrack refuses the sampled
#    recording (status 1, one exact line, no file) unless --sampled-ok;
#  - memtrace view's page, in headless Chromium, shows the notice near its
#    totals, and no notice for the unsampled recording.
# Prints "trust_sampled: N passed, N failed" last.
set -u
. "$(dirname "$0")/lib.sh"
memtrace=$build/memtrace
prog=$tests/trust_sampled_hold
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_RECORD MEMTRACE_RECORD_CULL_MS \
    MEMTRACE_SAMPLE MEMTRACE_SAMPLE_SEED
cd "$work" || exit 1

# record NAME [SETTING=VALUE...]: the program recorded to NAME.rec; its
# stderr in NAME.err.
record() {
    local name=$1
    shift
    timeout 60 env "$@" MEMTRACE_RECORD="$work/$name.rec" LD_PRELOAD="$build/libmemtrace.so" \
        "$prog" 2>"$work/$name.err"
    RC=$?
    status "$name: the program ran" 0
}
record sampled MEMTRACE_SAMPLE=65536 MEMTRACE_SAMPLE_SEED=7
record whole

check "sampled: the recording line" \
    "memtrace: recording: $work/sampled.rec ($(grep -o '([0-9]* events' sampled.err | tr -dc 0-9) events; sampled: one allocation in 65536 bytes); view it with: memtrace view $work/sampled.rec" \
    "$(grep '^memtrace: recording:' sampled.err)"
lacks "whole: the recording line says nothing of sampling" whole.err "sampled"

# export NAME ARGS...: memtrace export ARGS, status in RC, stderr in NAME.xerr.
export_() {
    local name=$1
    shift
    timeout 60 "$memtrace" export "$@" >"$work/$name.xout" 2>"$work/$name.xerr"
    RC=$?
}
sampled_line="memtrace export: sampled.rec is sampled: one allocation in 65536 bytes; its figures are of the sampled blocks only"

export_ sjson --json sampled.rec -o sampled.json
status "sampled: export --json" 0
check "sampled: export --json's one line" "$sampled_line" "$(cat sjson.xerr)"
export_ wjson --json whole.rec -o whole.json
status "whole: export --json" 0
check "whole: export --json says nothing" "" "$(cat wjson.xerr)"
rate() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("sample_rate"))' "$1"; }
check "sampled: the JSON's sample_rate" 65536 "$(rate sampled.json)"
check "whole: the JSON's sample_rate" 0 "$(rate whole.json)"

export_ sheap --heaptrack sampled.rec -o sampled.heaptrack.gz
status "sampled: export --heaptrack refused" 1
check "sampled: export --heaptrack's one line" \
    "memtrace export: sampled.rec is a sampled recording (one allocation in 65536 bytes) and heaptrack would show its figures as the run's; give --sampled-ok to export it anyway" \
    "$(cat sheap.xerr)"
if [ -e sampled.heaptrack.gz ]; then
    fail "sampled: refused, no file" "sampled.heaptrack.gz written"
else
    pass "sampled: refused, no file"
fi
export_ sheapok --heaptrack sampled.rec -o sampled.heaptrack.gz --sampled-ok
status "sampled: export --heaptrack --sampled-ok" 0
check "sampled: --sampled-ok's lines" \
    "$sampled_line
memtrace export: sampled.heaptrack.gz (open it with: heaptrack_gui sampled.heaptrack.gz)" \
    "$(cat sheapok.xerr)"
if [ -s sampled.heaptrack.gz ]; then pass "sampled: --sampled-ok wrote the file"
else fail "sampled: --sampled-ok wrote the file" "no sampled.heaptrack.gz"; fi
export_ wheap --heaptrack whole.rec -o whole.heaptrack.gz
status "whole: export --heaptrack" 0
check "whole: export --heaptrack's line" \
    "memtrace export: whole.heaptrack.gz (open it with: heaptrack_gui whole.heaptrack.gz)" \
    "$(cat wheap.xerr)"

# The page, as Chromium drew it: the notice's text (id "sampled").
browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
    fail "chromium" "not installed (Debian's chromium: make deps)"
    finish trust_sampled
    exit 1
fi
for name in sampled whole; do
    timeout 60 "$memtrace" view "$name.rec" -o "$work/$name.html" >/dev/null 2>"$work/$name.verr"
    RC=$?
    status "$name: memtrace view" 0
done
notice() { # NAME: the text of the page's #sampled element, "none" without one
    timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/chrome" \
        --dump-dom "file://$work/$1.html" >"$work/$1.dom" 2>/dev/null
    python3 - "$work/$1.dom" "$root/tests/e2e" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from view_dom import Tree
root = Tree(open(sys.argv[1]).read()).root
facts, n = root.one("p", class_="facts"), root.one(id="sampled")
if facts is None:
    print("no page drawn")
elif n is None:
    print("none")
else:
    # near the totals: the header's next paragraph after the facts line
    kids = facts.parent.kids
    print(n.alltext() if n in kids and kids.index(n) == kids.index(facts) + 1
          else "not beside the totals: " + n.alltext())
PY
}
check "sampled: the page's notice" \
    "Sampled recording: figures are of the sampled blocks only, one in 65,536 bytes (MEMTRACE_SAMPLE); the run's own are larger." \
    "$(notice sampled)"
check "whole: the page has no notice" none "$(notice whole)"

finish trust_sampled
