# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/count.sh, sourced by the bench scripts that count rather than time:
# valgrind's instruction and data-miss counts are the same whatever the
# machine's load, where a timing on a shared machine is not. The sourcing
# script has a scratch directory in $work.

# vg_count TOOL ENV... -- CMD...: one run of CMD under valgrind's TOOL
# (callgrind, or cachegrind with its cache simulation) with ENV set.
# Prints the run's "I refs" (callgrind) or "I refs D1-misses"
# (cachegrind), or "-" when the run failed. CMD's words are split again
# ("\ " keeps a space in an argument), so a command kept in one string
# can be passed as it is. The tool's profile is left in $VG_OUT (default
# $work/vg.out) and valgrind's report in $VG_OUT.err.
vg_count() {
    local tool=$1 env=() cmd out=${VG_OUT:-$work/vg.out}
    shift
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    read -a cmd <<< "$*" # no -r: see above
    local opts=(--tool="$tool")
    if [ "$tool" = cachegrind ]; then
        opts+=(--cache-sim=yes --cachegrind-out-file="$out")
    else
        opts+=(--callgrind-out-file="$out")
    fi
    if ! env "${env[@]}" valgrind "${opts[@]}" "${cmd[@]}" >/dev/null 2>"$out.err"; then
        echo -
        return
    fi
    awk '/ I +refs:/ { gsub(",", "", $4); i = $4 }
         / D1 +misses:/ { gsub(",", "", $4); m = $4 }
         END { if (i == "") print "-"; else if (m == "") print i; else print i, m }' "$out.err"
}

# vg_step A1 B1 A2 B2 STEPS: what B adds over A a step, from runs of two
# lengths, STEPS steps apart: ((B2 - A2) - (B1 - A1)) / STEPS, one
# decimal, or "-" when a count is. The start-up and the exit cancel.
vg_step() {
    case "$*" in *-*) echo - ;; *) awk -v a1="$1" -v b1="$2" -v a2="$3" -v b2="$4" -v n="$5" \
        'BEGIN { printf "%.1f", ((b2 - a2) - (b1 - a1)) / n }' ;; esac
}
