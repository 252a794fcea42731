/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace attach / detach: the library loaded late, into a running
 * process, redirects its allocation functions (attach.c). */
#ifndef MT_ATTACH_H
#define MT_ATTACH_H

/* What memtrace_attach and memtrace_detach (exported, called by the
 * launcher from gdb) return. */
enum {
    MT_ATTACH_OK = 0,
    MT_ATTACH_ALREADY = 1,      /* attach: attached already */
    MT_ATTACH_NOT_ATTACHED = 2, /* detach: not attached */
    MT_ATTACH_NOT_STARTED = 3,  /* the tracer did not start (stopped, standing aside) */
    MT_ATTACH_FAILED = 4,       /* this library's own definitions not found */
};

int memtrace_attach(void);
int memtrace_detach(void);

/* Whether the library was loaded by `memtrace attach` (the launcher sets
 * _MEMTRACE_ATTACH in the target before its dlopen), not preloaded. */
int mt_attach_late_load(void);

#endif
