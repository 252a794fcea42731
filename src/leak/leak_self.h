/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process itself as the leak check's target (leak_check.c): work
 * arrays in mappings of their own, its maps, a reader of its memory, and
 * the roots' source (scan/leak_gather.h) over its modules (dl_iterate_phdr)
 * and threads: those of the stopped world (base/stop_world.h), then the
 * exiting one, from the stack pointer of exit's caller. */
#ifndef MT_LEAK_SELF_H
#define MT_LEAK_SELF_H

#include "scan/leak_gather.h"
#include "scan/leak_scan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

/* Work arrays come from mmap, not from the allocator being examined nor
 * mt_os_map (whose failure stops recording): a check that cannot get memory
 * says so and lets the program exit as it would have. NULL on failure. */
void *mt_leak_map_bytes(size_t size);

/* A growable array of ITEM-byte items in its own mapping. */
typedef struct {
    char *p;
    size_t n, cap, item;
} mt_leak_vec;

/* Room for one more item at the end; NULL when none could be mapped. */
void *mt_leak_vec_push(mt_leak_vec *v);
/* Unmaps the items; V stays usable, empty. */
void mt_leak_vec_free(mt_leak_vec *v);

/* A thread that did not stop (the report's note). */
typedef struct {
    pid_t tid;
    bool stack_scanned; /* from the stack pointer of the system call it waits in */
} mt_leak_unstopped;

typedef struct {
    mt_leak_vec maps;       /* the mappings, read once the world is stopped */
    size_t nworld;          /* threads mt_world_stop signalled */
    mt_leak_vec *un;        /* mt_leak_unstopped: those that did not stop */
    uintptr_t own_sp;       /* the exiting thread's stack is scanned from here */
    uintptr_t own_regs[24]; /* and these are its root words */
    unsigned nown_regs;
} mt_leak_self;

/* Before the world is stopped (it unwinds with libunwind and calls dlsym):
 * the exiting thread's live stack from STACK_FROM (the asking exit
 * handler's frame) or above, its registers (UC: as the handler was entered),
 * glibc's TLS layout; returns the source over ME. The threads that do not
 * stop are added to UN as the source is asked for them. */
mt_leak_source mt_leak_self_begin(mt_leak_self *me, const ucontext_t *uc, uintptr_t stack_from,
                                  mt_leak_vec *un);
/* Once the world is stopped: the maps, and SRC's thread count. False if
 * the maps could not be read (then nothing can be read). */
bool mt_leak_self_stopped(mt_leak_self *me, mt_leak_source *src);
void mt_leak_self_end(mt_leak_self *me);

/* The scan's reader and regions over ME (mt_leak_input.read_ctx), from the
 * maps read once the world is stopped. */
const void *mt_leak_read_self(void *ctx, uintptr_t addr, size_t len);
int mt_leak_region_self(void *ctx, uintptr_t addr, uintptr_t *end);
bool mt_leak_vtable_self(void *ctx, uintptr_t addr);

#endif
