/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The memory of memtrace-symbolize's target, a core file or a process
 * (gdb's /proc/PID/mem), for the tables' reader (tables.c) and the leak
 * scan and refs (target_leaks.c, target_refs.c). One target per process:
 * the state is file-level. */
#ifndef MT_TOOLS_TARGET_MEM_H
#define MT_TOOLS_TARGET_MEM_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most one read hands out when the bytes cannot be given in place. */
#define MT_TARGET_READ_MAX (64 << 10)

/* Where the target's memory is read: a core file's segments (ELF, already
 * opened, mapped whole), or a process's /proc/PID/mem (MEM_FD, opened by
 * gdb, which may: it traces the process) with its maps (PID). */
void mt_target_mem_core(Elf *core);
void mt_target_mem_process(int mem_fd, int pid);

/* The target's memory as tables.h and the leak scan read it
 * (mt_tables_read_fn, mt_leak_read_fn; CTX unused): LEN bytes at ADDR,
 * valid until the next read; NULL where the target has none. */
const void *mt_target_read(void *ctx, uintptr_t addr, size_t len);

/* mt_leak_region_fn over the target: a core segment's dumped part is
 * readable, the rest of it not; a process's maps say. */
int mt_target_region(void *ctx, uintptr_t addr, uintptr_t *end);

/* The mapping (a core's segment, a process's maps line) holding ADDR into
 * [*LO, *HI); false if none. */
bool mt_target_mapping(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

/* What the mapping holding an address is, as /proc/PID/maps or a core's
 * NT_FILE note names it. */
typedef struct {
    uintptr_t lo, hi; /* the mapping (a core: the file's, or the segment's) */
    char path[1024];  /* the file, "[heap]", "[stack]"; "" anonymous memory */
    bool file;        /* PATH is a file; OFFSET the address's offset in it */
    uint64_t offset;
    char perms[5]; /* "rw-p"; "" on a core */
} mt_target_mapped;

/* The mapping holding ADDR into *W; false when the target has none. */
bool mt_target_mapped_at(uintptr_t addr, mt_target_mapped *w);

/* The process may have changed (it ran, gdb wrote to it): what was read
 * ahead is forgotten. mt_target_mem_refresh also reads its maps again. */
void mt_target_mem_changed(void);
void mt_target_mem_refresh(void);

#endif
