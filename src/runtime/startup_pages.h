/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The read-only file pages that start-up mapped, given back at its end.
 *
 * memtrace's start-up runs code and reads tables that a sampled run never
 * needs again: its own settings, lookups and set-up code, the libraries
 * it loads (libunwind, and liblzma and libgcc_s under it: none of them
 * runs in a sampled run's steady state), the parts of libc its start-up
 * calls (dlsym, stdio, /proc parsing). Each read fault maps the 64 KiB
 * around it (the kernel's fault-around), so those pages stay resident for
 * the whole run and count in the program's peak RSS, although they are
 * the page cache's and a later access maps them again for the price of a
 * minor fault. The pages the program itself touched before this
 * constructor ran (the loader's relocations, libc's and other libraries'
 * initializers) are given back too: on churn, libc's resident code ends
 * about 100 KiB below a native run's. */
#ifndef MT_STARTUP_PAGES_H
#define MT_STARTUP_PAGES_H

/* Unmaps, from this process's page tables only, the pages of every
 * loaded object's read-only PT_LOAD segments (text and read-only data)
 * that are the file's page-cache pages (/proc/self/pagemap: present and
 * file-backed); the executable's and the vDSO's are left alone, and so is
 * any page that is private (anonymous) there, such as one a debugger wrote
 * a breakpoint into. Nothing read there changes: a later access faults
 * the same file page in again. Does nothing when pagemap cannot be read.
 * Run once, at the end of the constructor, in sample mode (the always-on
 * configuration, whose peak RSS is the target); no allocation, no lock of
 * memtrace's (the loader's, through dl_iterate_phdr). */
void mt_startup_pages_drop(void);

#endif
