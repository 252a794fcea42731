/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The read-only file pages that memtrace's start-up mapped, given back at
 * its end.
 *
 * memtrace's start-up runs code and reads tables that a sampled run never
 * needs again: its own settings, lookups and set-up code, the libraries
 * it loads (libunwind, and liblzma and libgcc_s under it: none of them
 * runs in a sampled run's steady state), the parts of libc its start-up
 * calls (dlsym, stdio, /proc parsing). Each read fault maps the 64 KiB
 * around it (the kernel's fault-around), so those pages stay resident for
 * the whole run and count in the program's peak RSS, although they are
 * the page cache's and a later access maps them again for the price of a
 * minor fault.
 *
 * The rule, which keeps the program's footprint from ever going below its
 * own, object by object (read-only PT_LOAD segments: text and read-only
 * data; the executable's and the vDSO's are never touched):
 *   - memtrace's own object (this library): all its file pages go,
 *     whatever was present before;
 *   - objects in the process only because memtrace needs them: those its
 *     DT_NEEDED closure reaches and no other object's does (the
 *     executable's, another preloaded or already loaded object's; the
 *     closure does not pass through memtrace's own object: a program
 *     linked with -lmemtrace does not make memtrace's dependencies its
 *     own), and those loaded after the snapshot (memtrace's dlopens): all
 *     their file pages go. libunwind, and liblzma under it, are the usual
 *     ones; libgcc_s too in a C program, not in a C++ one (libstdc++ needs
 *     it); liblzma not when the program needs it (libxml2 under libLLVM);
 *   - every other object (libc, ld.so, libstdc++, the program's
 *     libraries): only the pages that were not present at the snapshot
 *     go; those present then (the loader's reads, the program's libraries'
 *     initializers, memtrace's own start-up if a malloc started it before
 *     its constructor, and the snapshot's own calls into libc) stay.
 * So memtrace's cost before its constructor is kept when it lies in the
 * program's objects: the figure errs above the truth, never below. */
#ifndef MT_STARTUP_PAGES_H
#define MT_STARTUP_PAGES_H

#include <stdbool.h>

/* The snapshot: which pages of every loaded object's read-only PT_LOAD
 * segments (the executable's and the vDSO's aside) are present now
 * (/proc/self/pagemap), and which objects are memtrace's by the rule
 * above (their DT_NEEDED entries, matched as the loader does), in a
 * mapping of its own. Called first thing in the constructor, whether or
 * not a malloc started memtrace before it (the program's libraries'
 * initializers may run between that malloc and the constructor: their
 * pages are the program's). Does nothing unless MEMTRACE_SAMPLE is set
 * (sample mode, the always-on configuration, whose peak RSS is the
 * target), or if pagemap cannot be read or a snapshot exists. */
void mt_startup_pages_mark(void);

/* With DROP, unmaps from this process's page tables the pages of those
 * segments that the rule gives up and that are the file's page-cache
 * pages (present and file-backed, or absent); a page that is private
 * there (a debugger's breakpoint, a text relocation's copy), resident or
 * swapped out, is kept. Nothing read there changes: a later access faults
 * the same file page in again. Then (DROP or not) forgets the snapshot.
 * Does nothing without one. Run once, at the end of the constructor; no
 * allocation, no lock of memtrace's (the loader's, through
 * dl_iterate_phdr). */
void mt_startup_pages_drop(bool drop);

#endif
