#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the always-on profiler (MEMTRACE_SAMPLE=524288,
# MEMTRACE_SYMBOLIZE=later) keeps resident of read-only file mappings
# (tests/progs/perf_foot_pages.c reads its own smaps and pagemap): a read
# fault maps the 64 KiB around it, so code and tables touched once stay
# resident for the whole run.
#   - Start-up gives back the file pages it mapped
#     (src/runtime/startup_pages.h): at main, nothing of liblzma's and
#     libgcc_s's code (loaded under libunwind, needed by nothing else in
#     this C program: memtrace's, dropped whole) is mapped; 64 KiB of each
#     was before, from their own initializers.
#   - It keeps what the program had (tests/progs/perf_foot_keep.c): a page
#     of a library's read-only data that its constructor, run before
#     memtrace's, mapped is still mapped at main, and so is liblzma's code
#     when the program needs it too (its library's DT_NEEDED); both went
#     when the drop took every page not private.
#   - memtrace's own pages go whole, even those mapped before its
#     constructor: at main, of its code only one run of at most 32 pages
#     around start-up's last code, none of its read-only data.
#   - The library's code that runs after start-up sits together, ahead of
#     .text (src/capture/steady_text.ld): after a churn of small blocks,
#     no page of the library's code lies past the 64 KiB after the end of
#     its .text.steady section (before, its pages were spread over all of
#     .text: 316 KiB of 360 resident on churn). main sets a SIGINT handler
#     with signal() first, as sqlite3's shell does: with mt_signal in
#     .text, 14 to 16 pages lay past that bound (about 50 pages of code
#     mapped; under 30 with it in .text.steady).
#   - The tables of .bss sit ahead of it (src/capture/steady_text.ld,
#     -fdata-sections), its small variables together: after the churn,
#     at most 16 pages of the library's writable data (.data, .bss and
#     the tables' touched pages) are mapped; 22 were, the small variables
#     spread among the tables.
#   - A live-table shard's first table is 256 bytes, one sixteenth of a
#     page shared with its neighbours (src/store/live_table.c): a thread
#     recording 7 blocks in a region of its own (every block sampled,
#     tests/progs/perf_footprint.c 7) grows memtrace's tables by at most
#     7 first tables; it was a page per shard they landed in.
# A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
prog=$tests/perf_foot_pages
# The profiler as a copy written 4 KiB at a time: its page cache then
# holds single pages, so that a fault maps its 64 KiB window and no more
# (a file written in larger pieces may sit in larger folios, which recent
# kernels map whole on a fault).
prof=$work/libmemtrace-profiler.so
dd if="$build/libmemtrace-profiler.so" of="$prof" bs=4096 status=none || fail "copy of the profiler" "dd: $?"
unset MEMTRACE_OUTPUT MEMTRACE_FOLDED MEMTRACE_PPROF MEMTRACE_PPROF_EVERY MEMTRACE_SAMPLE \
    MEMTRACE_SYMBOLIZE MEMTRACE_UNWIND MEMTRACE_RECORD MEMTRACE_GUARD_SAMPLE MEMTRACE_INTERVAL_MS

out=$work/out
# No periodic report (its code is in the list too, but whether one runs
# depends on the machine's speed).
timeout 60 env LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_SYMBOLIZE=later MEMTRACE_INTERVAL_MS=0 \
    "$prog" libmemtrace-profiler.so liblzma.so libgcc_s.so >"$out" 2>"$work/err"
check "exit status" 0 "$?"

# libgcc_s is memtrace's own DT_NEEDED (-fexceptions); liblzma comes with
# libunwind on Debian, and is left out of the count where it does not.
for l in libgcc_s.so liblzma.so; do
    got=$(awk -v l="$l" '$1 == "start" && $2 == l && $3 == "r-xp" { print $4 }' "$out")
    [ "$l" = liblzma.so ] && [ -z "$got" ] && continue
    check "$l: its code mapped at main, KiB" 0 "${got:-absent}"
done

# .text.steady's end in the file: [Nr] Name Type Address Off Size ...
end=$(readelf -SW "$prof" | sed -nE 's/.*\] \.text\.steady +PROGBITS +[0-9a-f]+ ([0-9a-f]+) ([0-9a-f]+) .*/\1 \2/p' |
    { read -r o s && echo $((0x$o + 0x$s)); })
if [ -n "$end" ]; then
    pass "the library has a .text.steady section (ends at file offset $end)"
else fail "the library has a .text.steady section" "$(readelf -SW "$prof" | grep text)"; fi
n=0 past=0
while read -r _ off; do
    n=$((n + 1))
    [ $((0x$off)) -ge $((${end:-0} + 65536)) ] && past=$((past + 1))
done < <(grep '^page ' "$out")
if [ "$n" -gt 0 ] && [ "$past" = 0 ]; then
    pass "after the churn: $n pages of code mapped, none past .text.steady's end + 64 KiB"
else fail "after the churn: no page of code past .text.steady's end + 64 KiB" \
    "$past of $n pages: $(grep '^page' "$out" | tail -5 | tr '\n' ' ')"; fi

# The library's writable data ends where .bss does (the last section).
data_end=$(readelf -SW "$prof" | sed -nE 's/.*\] \.bss +NOBITS +([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+) .*/\1 \2/p' |
    { read -r a s && echo $((0x$a + 0x$s)); })
nd=0
while read -r _ a; do
    [ $((0x$a)) -lt "${data_end:-0}" ] && nd=$((nd + 1))
done < <(grep '^data ' "$out")
if [ -n "$data_end" ] && [ "$nd" -gt 0 ] && [ "$nd" -le 16 ]; then
    pass "after the churn: $nd pages of the library's writable data mapped, at most 16"
else fail "after the churn: at most 16 pages of the library's writable data mapped" \
    "$nd below $data_end: $(grep '^data' "$out" | tr '\n' ' ')"; fi

# What start-up keeps: libperf_keep.so's constructor, which runs before
# memtrace's, maps a page of its read-only data and notes liblzma's code
# pages (liblzma is its DT_NEEDED: the program's too); memtrace's own
# pages go whole.
keep_src=$(dirname "$0")/../progs/perf_foot_keep.c
gcc -O0 -g -shared -fPIC -DPERF_FOOT_KEEP_LIB -Wl,-z,now -o "$work/libperf_keep.so" "$keep_src" \
    -Wl,--no-as-needed -llzma 2>"$work/keep.cc" &&
    gcc -O0 -g -Wl,-z,now -o "$work/keep" "$keep_src" -L"$work" -Wl,--no-as-needed -lperf_keep \
        -Wl,-rpath,"$work" 2>>"$work/keep.cc"
check "perf_foot_keep and libperf_keep.so built" 0 "$?"
inits=$(timeout 60 env LD_DEBUG=files LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_SYMBOLIZE=later \
    MEMTRACE_INTERVAL_MS=0 MEMTRACE_EXIT_TOP=0 "$work/keep" x 2>&1 >/dev/null |
    sed -nE 's/.*calling init: .*\/(libperf_keep|libmemtrace-profiler)\.so$/\1/p' | tr '\n' ' ')
check "libperf_keep.so's constructor runs before memtrace's (LD_DEBUG=files)" \
    "libperf_keep libmemtrace-profiler " "$inits"
timeout 60 env LD_PRELOAD="$prof" MEMTRACE_SAMPLE=524288 MEMTRACE_SYMBOLIZE=later MEMTRACE_INTERVAL_MS=0 \
    MEMTRACE_EXIT_TOP=0 "$work/keep" libmemtrace-profiler.so >"$work/keep.out" 2>"$work/keep.err"
check "perf_foot_keep: exit status" 0 "$?"
check "a page the program's library mapped before memtrace's constructor: still mapped at main" \
    "kept 1" "$(grep '^kept' "$work/keep.out")"
lz=$(sed -nE 's/^lzma ([0-9]+) ([0-9]+)$/\1 \2/p' "$work/keep.out")
if [ -n "$lz" ] && [ "${lz% *}" = "${lz#* }" ] && [ "${lz% *}" -gt 0 ]; then
    pass "liblzma, the program's too: all $((${lz#* } * 4)) KiB of its code mapped before memtrace's constructor still are"
else fail "liblzma, the program's too: its code mapped before memtrace's constructor still is" \
    "'$lz' (kept, then)"; fi
# memtrace's own read-only pages at main: of its code, one run of pages
# around start-up's last code (the constructor and the drop, which run on
# as the pages go: [lo, hi)), as one fault maps it (its 64 KiB window, or
# the page cache's larger folio); none of its read-only data after the
# code. Its first segment (the headers and dynamic symbol tables) is not
# looked at: any symbol lookup reads it again (libc binds
# _dl_audit_preinit lazily before main).
lo='' hi=0
while read -r a size _ name; do
    case $name in mt_constructor | mt_startup_pages_drop | drop_object | drop_segment) ;; *) continue ;; esac
    { [ -z "$lo" ] || [ $((0x$a)) -lt "$lo" ]; } && lo=$((0x$a))
    [ $((0x$a + 0x$size)) -gt "$hi" ] && hi=$((0x$a + 0x$size))
done < <(nm -S "$prof")
read -r c_off c_va < <(readelf -lW "$prof" | awk '$1 == "LOAD" && $7 == "R" && $8 == "E" { print $2, $3 }')
runs=() data_pages=0 prev=-1
while read -r _ perms off; do
    if [ "$perms" = r-xp ]; then
        va=$((0x$off - c_off + c_va))
        if [ "$va" = $((prev + 4096)) ]; then runs[-1]="${runs[-1]%-*}-$va"
        else runs+=("$va-$va"); fi
        prev=$va
    elif [ $((0x$off)) -gt $((c_off)) ]; then
        data_pages=$((data_pages + 1))
    fi
done < <(grep '^own ' "$work/keep.out")
r_lo=${runs[0]%-*} r_hi=${runs[0]#*-}
if [ -n "$lo" ] && [ "${#runs[@]}" = 1 ] && [ "$r_lo" -le "$lo" ] && [ "$((r_hi + 4096))" -ge "$hi" ] &&
    [ "$r_hi" -lt $((r_lo + 32 * 4096)) ]; then
    pass "memtrace's code at main: one run of $(((r_hi - r_lo) / 4096 + 1)) pages, at most 32, around start-up's last code"
else fail "memtrace's code at main: one run of at most 32 pages around start-up's last code [$lo, $hi)" \
    "${#runs[@]} runs: $(printf '%s ' "${runs[@]:0:6}")"; fi
check "memtrace's read-only data at main: pages mapped" 0 "$data_pages"

for lib in libmemtrace libmemtrace-profiler; do
    timeout 60 env LD_PRELOAD="$build/$lib.so" MEMTRACE_SAMPLE=1 MEMTRACE_SAMPLE_SEED=1 \
        MEMTRACE_EXIT_TOP=0 "$tests/perf_footprint" 7 >"$work/$lib.table" 2>"$work/$lib.table.err"
    check "$lib: table program's exit status" 0 "$?"
    got=$(sed -nE 's/^table_growth ([0-9]+)$/\1/p' "$work/$lib.table")
    if [ -n "$got" ] && [ "$got" -le $((7 * 256)) ]; then
        pass "$lib: 7 sampled blocks in a new region grow the tables by $got bytes, at most 7 * 256"
    else fail "$lib: 7 sampled blocks grow the tables by at most 7 * 256 bytes" \
        "got '$got': $(head -3 "$work/$lib.table.err")"; fi
done

finish perf_foot_pages
