/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timeline's file format (MEMTRACE_RECORD), shared by its writer
 * (timeline/emit.c, in the traced process) and its reader
 * (tools/export/timeline_read.c, memtrace-export). Version 1.
 *
 * The file is MT_REC_MAGIC (8 bytes) and then blocks, each a 12-byte
 * header (compressed length, raw length, both u32 little-endian, and u32
 * MT_REC_BLOCK_TAG) followed by one zstd frame of that many bytes, or by
 * the raw bytes themselves when both lengths are equal (a block that zstd
 * would barely shrink: addresses and sizes of a churning program are
 * nearly random, and compressing them costs more CPU than it saves): every
 * block reads on its own, so a file cut anywhere (kill -9, a full
 * disk) is a readable prefix up to its last whole block. Only a file whose
 * last record is MT_REC_END is whole; the reader says "truncated"
 * otherwise.
 *
 * A block's raw bytes are records: a tag byte and LEB128 numbers ("u"
 * below; "s" a zigzag-coded signed number). Times are ns since the
 * recording's start (CLOCK_MONOTONIC), coded as the difference from the
 * previous record's time in the stream; addresses of A and F as the
 * difference from the previous A or F's address. Events of one thread are
 * in its order; events of different threads interleave, each within a
 * drain's latency of the others: a reader sorts by time.
 *   H  u version, u pid, u start_unix_ns, u cull_ns, u len + command bytes
 *   R  u sample_bytes           (a sampled timeline, MEMTRACE_SAMPLE: one
 *                               allocation in SAMPLE_BYTES bytes is in A, F
 *                               and C, the others not at all; right after H,
 *                               in a sampled timeline only, so a timeline
 *                               without R, older ones too, is of every
 *                               allocation. A reader from before R stops at
 *                               it, reading a sampled timeline as truncated
 *                               after its head, never as a whole run.)
 *   T  u thread                 (the thread of the A and F records after it)
 *   A  s dtime, u stack, u size, s daddr
 *   F  s dtime, s daddr
 *   C  s dtime, u stack, u count, u bytes   (COUNT allocations of STACK,
 *                               BYTES in all, each freed within cull_ns:
 *                               culled while writing, not in A and F;
 *                               written by older writers: a reader counts
 *                               them all temporary)
 *   K  s dtime, u stack, u count, u bytes, u temporary   (C, with how many
 *                               of the COUNT frees were temporary
 *                               allocations, store/temporary.h's rule on
 *                               the freeing thread's own events, culled
 *                               ones included; COUNT < 2^24)
 *   G  s dtime, s daddr, u stack, u size   (F, after culled events of its
 *                               thread: the rule's latest kind on that
 *                               thread just before it was (SIZE, STACK),
 *                               or none when STACK is 0; a reader of A and
 *                               F alone would not know it)
 *   S  u stack, u depth, DEPTH x s (frame - previous frame; the first
 *                               from 0), innermost first
 *   M  u bias, u low, u high, u len + build id, u len + path
 *                               (a module: its addresses LOW..HIGH, file
 *                               address = address - BIAS)
 *   Y  u address, u rows, ROWS x (u len + function, u len + file, u line)
 *                               (what a frame's address symbolizes to,
 *                               innermost inline row first; "" unknown)
 *   E  s dtime                  (the end: the run's end time; last record)
 */
#ifndef MT_RECORD_FORMAT_H
#define MT_RECORD_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define MT_REC_MAGIC "MTREC01\n"
#define MT_REC_MAGIC_LEN 8
#define MT_REC_BLOCK_TAG 0x6b6c426du /* "mBlk" */
#define MT_REC_HEADER_LEN 12
#define MT_REC_VERSION 1
/* A block's raw length at most (the reader refuses more). */
#define MT_REC_BLOCK_MAX ((size_t)8 << 20)

enum {
    MT_REC_HEAD = 'H',
    MT_REC_SAMPLED = 'R',
    MT_REC_THREAD = 'T',
    MT_REC_ALLOC = 'A',
    MT_REC_FREE = 'F',
    MT_REC_CULLED = 'C',
    MT_REC_CULLED_TEMP = 'K',
    MT_REC_FREE_AFTER = 'G',
    MT_REC_STACK = 'S',
    MT_REC_MODULE = 'M',
    MT_REC_SYMBOL = 'Y',
    MT_REC_END = 'E',
};

/* Writes V at P (room for 10 bytes); returns the end. */
static inline uint8_t *mt_rec_put_u(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *mt_rec_put_s(uint8_t *p, int64_t v)
{
    return mt_rec_put_u(p, ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0));
}

/* Reads a number at *P before END into *V; 0 when it does not end there
 * (or is longer than 10 bytes). */
static inline int mt_rec_get_u(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; *p < end && shift < 70; shift += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

static inline int mt_rec_get_s(const uint8_t **p, const uint8_t *end, int64_t *v)
{
    uint64_t u;
    if (!mt_rec_get_u(p, end, &u))
        return 0;
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 1;
}

#endif
