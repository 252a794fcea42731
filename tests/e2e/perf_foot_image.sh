#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the libraries' own image costs every traced process: their
# initialized writable data (the RW PT_LOAD's file size) is read from the
# file, and each read fault maps the pages around it, so a large
# initialized table costs its pages whether used or not. At most 64 KiB
# in each library: zeroed tables go in .bss, whose untouched pages cost
# nothing (the profiler's shared site table, 256 KiB, was initialized:
# 282 KiB of file-backed data, 52 KiB of it resident on churn). A second.
set -u
. "$(dirname "$0")/lib.sh"

for l in libmemtrace libmemtrace-profiler; do
    f=$build/$l.so
    # RW LOAD: Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
    filesz=$(readelf -lW "$f" | awk '$1 == "LOAD" && $7 == "RW" { print $5 }' | xargs printf '%d\n')
    if [ -n "$filesz" ] && [ "$filesz" -le 65536 ]; then
        pass "$l: initialized data $filesz bytes, at most 65536"
    else fail "$l: initialized data at most 65536 bytes" "got '$filesz'"; fi
done

finish perf_foot_image
