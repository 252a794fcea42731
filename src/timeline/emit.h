/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writer's records (timeline/ only): drain.c drains the rings and
 * calls these under the drain lock; emit.c codes them into the current
 * block (record_format.h) and the block into the file; cull.c holds the
 * allocations back for MEMTRACE_RECORD_CULL_MS. */
#ifndef MT_TL_EMIT_H
#define MT_TL_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/temporary.h"

/* False when no memory for the writer's buffers. Writes the magic at
 * once. */
bool mt_tl_emit_init(uint64_t cull_ns);
/* SAMPLE_BYTES: MEMTRACE_SAMPLE's mean bytes between the allocations
 * recorded, 0 when every allocation is (no R record then). */
void mt_tl_emit_head(uint64_t pid, uint64_t start_unix_ns, uint64_t cull_ns, uint64_t sample_bytes,
                     const char *command, size_t len);
void mt_tl_emit_alloc(uint32_t thread, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack);
void mt_tl_emit_free(uint32_t thread, uint64_t t, uint64_t addr);
/* COUNT culled allocations of STACK, TEMPORARY of them temporary
 * (COUNT < MT_TL_CULLED_MAX). */
#define MT_TL_CULLED_MAX ((1u << 24) - 1)
void mt_tl_emit_culled(uint64_t t, uint32_t stack, uint64_t count, uint64_t bytes,
                       uint64_t temporary);
/* A free (F); with LATEST, a G: the thread's latest kind before it. */
void mt_tl_emit_free_after(uint32_t thread, uint64_t t, uint64_t addr, const mt_temp_state *latest);
void mt_tl_emit_end(uint64_t t);
/* Symbols for every frame of the stacks written, through FN(ADDR, CTX). */
void mt_tl_emit_symbols(void (*fn)(uintptr_t addr, void *ctx));
/* Writes the current block out when it is large, or when FORCE and not
 * empty. False once writing failed (the timeline then stops). */
bool mt_tl_emit_flush(bool force);
/* The events written (A, F and the allocations C counts), and whether a
 * write failed. */
uint64_t mt_tl_emit_events(void);
bool mt_tl_emit_failed(void);

/* Culling (cull.c): an allocation waits up to CULL_NS for its free. */
bool mt_tl_cull_init(uint64_t cull_ns);
void mt_tl_cull_alloc(uint32_t thread, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack);
/* True when the free of ADDR at T culled its allocation: neither is
 * written, a K record counts it, and whether it ended a temporary
 * allocation (store/temporary.h, by LATEST, the freeing thread's latest
 * kind, which it clears). False: nothing culled, LATEST untouched. */
bool mt_tl_cull_free(uint64_t t, uint64_t addr, mt_temp_state *latest);
/* Writes the allocations older than NOW - CULL_NS (all: NOW UINT64_MAX) and
 * the counts of those culled. */
void mt_tl_cull_expire(uint64_t now);

#endif
