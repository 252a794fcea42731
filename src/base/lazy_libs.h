/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libraries memtrace's libraries use for symbolizing (libdw, with
 * libelf and theirs: zlib, liblzma, libbz2), writing pprof files (zlib)
 * and recordings (libzstd) are not DT_NEEDED: each is dlopened on first
 * need, so that a run that never needs one (the sampled profiler with
 * MEMTRACE_SYMBOLIZE=later) neither maps nor relocates it.
 *
 * Every function of theirs that memtrace calls (lazy_libs.def) is defined
 * in the library, hidden, as a trampoline: a jump through a pointer, which
 * the first call fills by loading the function's library and looking up
 * all of its functions at once. Failure to load says so in one memtrace:
 * line, once per library; the functions then return a value that their
 * callers take for failure (NULL or 0 for libdw and libzstd, -1 for zlib).
 *
 * Loading takes the dynamic loader's lock and allocates: it must not first
 * happen where that cannot be (a signal handler, inside malloc with
 * memtrace's locks held). mt_lazy_libs_start loads, from the constructor,
 * every library that a run's settings may need in such places.
 *
 * A dlopened library's thread-local storage is dynamic: glibc allocates a
 * thread's block with malloc on its first access in that thread, and ends
 * the process when that fails. libdw and libelf have some (their error
 * codes): the loading thread's is allocated on load, any other's when it
 * first symbolizes (mt_sym_self), not when libdw first fails for want of
 * memory. libunwind keeps its
 * DT_NEEDED: its per-thread caches are read in SIGSEGV's handler (the
 * guard pages), where no first allocation may happen. */
#ifndef MT_LAZY_LIBS_H
#define MT_LAZY_LIBS_H

/* At start-up, from the constructor (after mt_start: the settings are
 * read): loads every library unless MEMTRACE_SYMBOLIZE=later, and then
 * those the settings may need where loading cannot be (above). */
void mt_lazy_libs_start(void);

#endif
