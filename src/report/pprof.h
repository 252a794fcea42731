/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pprof writer: heap profiles in pprof's profile.proto (gzipped), the
 * format `go tool pprof`, speedscope, Pyroscope and Parca read. One writer
 * for every entry point: the library (profiler.c, pprof_file.c) and
 * memtrace-symbolize (the gdb command). Encoded by protobuf-c from code
 * generated at build time, compressed by zlib; every byte either of them or
 * this file allocates comes from the heap the caller hands over. */
#ifndef MT_PPROF_H
#define MT_PPROF_H

#include "report/format.h"
#include "report/pprof_heap.h"
#include "symbolize/symbolize.h"

#include <stdbool.h>
#include <stdint.h>

/* The values of one sample, in the order of the sample types: Go's heap
 * profile's alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes. A profile made without the allocation counts (the
 * live table's in-use profile) has only the last two types. */
typedef struct {
    uint64_t alloc_objects, alloc_bytes;
    uint64_t inuse_objects, inuse_bytes;
} mt_pprof_values;

typedef struct mt_pprof mt_pprof;

/* A new, empty profile; NULL when HEAP is out of memory. WITH_ALLOC: the
 * four sample types, else inuse_objects and inuse_space only. The default
 * sample type is inuse_space either way. */
mt_pprof *mt_pprof_new(const mt_pprof_heap *heap, bool with_alloc);

/* Adds VALUES to the sample of KEY, made on the first call for KEY from
 * FRAMES[0..DEPTH) (return addresses, innermost first: copied) and THREAD
 * (NULL: the sample belongs to no single thread; its name is copied). Later
 * calls with the same KEY add their values only. False when out of memory:
 * the sample is then missing from the profile. Symbolizes nothing. */
bool mt_pprof_add(mt_pprof *p, uint64_t key, const uintptr_t *frames, unsigned depth,
                  const mt_fmt_thread *thread, const mt_pprof_values *values);

/* Labels the sample of KEY (added already) with TAG, its tag scope's path
 * ("parser/lexer"), as the string label "tag" (go tool pprof -tagfocus);
 * the first call for KEY wins; "" or NULL: none. False when out of
 * memory. */
bool mt_pprof_tag(mt_pprof *p, uint64_t key, const char *tag);

/* Symbolizes the samples' stacks through DWFL (NULL: addresses only; see
 * mt_sym_frames for REFRESH; the caller holds the symbolizer's lock, as for
 * mt_sym_frames) and writes the gzipped profile to FD. TIME_NS: when the
 * profile was taken (ns since the epoch, 0: unknown); DURATION_NS: over how
 * long. Returns NULL when written, else why not (a static string or
 * strerror's). P stays usable only for mt_pprof_free.
 *
 * The profile: one Location per distinct address, whose Lines are its rows
 * from mt_sym_frames (one per function of the inline chain, innermost
 * first, as pprof wants them), looked up at address - 1 as every stack
 * memtrace prints; a frame that tail calls left off the stack and memtrace
 * rebuilds (mt_sym_tail_calls, as the text stacks show them) is a Location
 * of its own, whose address is the one after the tail call's jump, placed
 * between the frames it sits between. One Function per (name, mangled
 * name, file); one Mapping per module (file name, address range, offset,
 * build-id). Samples of a single thread carry the string label "thread",
 * "N" or "N (NAME)". */
const char *mt_pprof_write(mt_pprof *p, mt_sym_state *dwfl, bool refresh, int fd, int64_t time_ns,
                           int64_t duration_ns);

/* ADDR lies in the main executable (0: unknown, the default): its module's
 * Mapping is written first, as pprof takes the first Mapping for the
 * profile's binary (the name `go tool pprof` shows, the file it looks for);
 * without it the first is that of the first frame symbolized, often libc's. */
void mt_pprof_main(mt_pprof *p, uintptr_t addr);

/* Number of samples added. */
size_t mt_pprof_samples(const mt_pprof *p);

/* A sampled profile (MEMTRACE_SAMPLE): its values are estimates, already
 * scaled, and the profile's period is BYTES, the sampling rate, as Go's
 * heap profiles say it; unset (0), the period is 1. */
void mt_pprof_set_period(mt_pprof *p, uint64_t bytes);

void mt_pprof_free(mt_pprof *p);

#endif
