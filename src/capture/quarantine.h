/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Heap errors on the hot path: the redzone after every recorded
 * block, the per-thread quarantine of freed blocks, and how a free that
 * the quarantine defers is made later (mt_free_call).
 *
 * Redzone. Every block memtrace records (mt_record) was asked of the next
 * allocator with mt_cfg.redzone bytes more than the program asked for
 * (mt_padded); the record keeps the program's size, so the redzone is
 * [ptr + size, ptr + size + redzone), filled with MT_REDZONE_BYTE when
 * the block is recorded and checked when it is freed or resized, at exit
 * and by memtrace_check(). Invariant: a block has a redzone exactly when
 * it has a record (redzone > 0); blocks memtrace does not record
 * (bypassed, in a pass-through scope, the internal heap, before start-up
 * or attach) have none and are never checked. mt_cfg.redzone is set once
 * at start-up, before any record.
 *
 * Quarantine. A traced free (phase READY) does not reach the next
 * allocator at once: the block's head (mt_quarantine_fill: its bytes up to
 * the end of its first cache line) is filled with MT_FREED_BYTE and the
 * block waits in the freeing thread's ring, with its stacks and the call
 * that frees it for real, until the ring holds more than mt_cfg.quarantine
 * bytes (then the oldest leave one by one) or all its slots are taken
 * (then the MT_QUARANTINE_BATCH oldest at once). A block that leaves is
 * checked (its fill; its redzone was checked at its free and is checked
 * again only by mt_quarantine_check) and freed, with the ring taken. A
 * ring is used
 * by one thread (owner), so the hot path shares no line with another
 * thread; a checker from another thread (exit, memtrace_check) takes the
 * ring's busy word, as the owner does around each change, and the owner
 * that finds it taken frees at once. A slot whose ptr is 0 is a hole (a
 * block taken out again, mt_quarantine_take). A thread's ring is flushed (checked
 * and freed) when the thread exits and is then free for another thread;
 * rings are never unmapped, and all of them are on one list (rings, from
 * mt_quarantine_rings) that a reader out of process walks through the
 * state descriptor. */
#ifndef MT_QUARANTINE_H
#define MT_QUARANTINE_H

#include "base/atomic.h"
#include "base/common.h"
#include "base/upcalls.h"
#include "capture/state.h"
#include "scan/pattern.h"
#include "store/freed_history.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The byte every redzone holds and the byte a quarantined block is filled
 * with (published in the state descriptor). */
#define MT_REDZONE_BYTE 0xfa
#define MT_FREED_BYTE 0xfd
/* The bytes of a quarantined block at PTR of SIZE bytes that are filled
 * and checked: from its start to the end of its cache line (16 to 64
 * bytes of a 16-aligned block, all of a smaller one). A write after free
 * lands in a block's first fields far more often than further on, and
 * that line is the one the allocator's own free and the next malloc
 * touch anyway (the chunk header, the free list's link): each further
 * line filled at the free and checked when the block leaves costs a cache
 * miss at each (cachegrind on churn: 1.7 misses a malloc/free pair for
 * 128 bytes instead). */
#define MT_QUARANTINE_LINE 64
static inline uint64_t mt_quarantine_fill(uintptr_t ptr, uint64_t size)
{
    uint64_t room = MT_QUARANTINE_LINE - (ptr & (MT_QUARANTINE_LINE - 1));
    return size < room ? size : room;
}

/* A ring has this many slots (a power of two), more when
 * MEMTRACE_QUARANTINE asks for more bytes than that many 4 KiB blocks (the
 * power of two that holds them), MT_QUARANTINE_SLOTS_MAX at most. */
#define MT_QUARANTINE_SLOTS_MIN 1024
#define MT_QUARANTINE_SLOTS_MAX (1u << 20)
/* A full ring gives back this many of its oldest blocks at once, their
 * head lines prefetched together first so that their misses overlap: it
 * holds at least MT_QUARANTINE_SLOTS_MIN - 16 = 1,008 blocks once full,
 * above the 1,000. (One block a free, the one 4 frees later
 * prefetched, had fewer misses under cachegrind but measured slower:
 * churn 1.43x both checks off against 1.07x, interleaved timings.) */
#define MT_QUARANTINE_BATCH 16

/* ---- glibc's chunk header: the size word before a block */

/* glibc keeps a chunk's size in the word before the block (flags in its 3
 * low bits; MT_GLIBC_MMAPPED, 2, for a chunk of its own mapping, whose
 * offset into its first page is in the word before). For a block memtrace
 * asked ASKED bytes of it, the size is request2size(ASKED) (the asked
 * bytes and the 8-byte header rounded up to 16, 32 at least), or up to 32
 * more (a free chunk too small to split was handed out whole; a memalign's
 * tail), or up to the block's alignment more (a size rounded up to it
 * before it reached glibc); a mapped chunk's ends at a page's end. Any other size word was
 * written by the program (an underflow: glibc's free would abort on it, or
 * worse, follow it): it must never be followed (freed, resized, walked).
 * Returns 0 when the word is one glibc could have written, else the
 * distance from the block's start of the first byte of the word that
 * differs from every size glibc could have written (1 to 8: an underflow
 * of that many bytes). H is the size word, PREV the word before it (a
 * mapped chunk's offset); pure, for the reader out of process too. */
static inline uint64_t mt_glibc_request2size(uint64_t asked)
{
    return asked + 23 < 32 ? 32 : (asked + 23) & ~(uint64_t)15;
}

/* Whether size word H is one glibc writes for a chunk of NB bytes in the
 * common case (not mapped, not a pvalloc's): the hot path's test. */
static inline bool mt_glibc_size_plain(uint64_t h, uint64_t nb)
{
    uint64_t sz = h & ~(uint64_t)7;
    return !(h & 2) && sz - nb <= 32 && !(sz & 15);
}

/* mt_glibc_size_damage past the common case (out of line: cold). */
static MT_COLD MT_NOINLINE unsigned mt_glibc_size_damage_rest(uint64_t h, uint64_t prev,
                                                              uint64_t ptr, uint64_t nb)
{
    uint64_t sz = h & ~(uint64_t)7;
    if ((h & 2) && sz >= nb && sz < ((uint64_t)1 << 44) && !((prev + sz) & 4095))
        return 0;
    /* An aligned block's: what was asked may have been rounded up to the
     * alignment on the way (libstdc++'s aligned operator new asks
     * aligned_alloc for a multiple of it; pvalloc rounds to a page), and
     * the block's address is aligned at least that much. */
    uint64_t align = ptr & -ptr;
    if (!(h & 2) && !(sz & 15) && sz >= nb && sz - nb <= align + 32)
        return 0;
    /* The least damage that explains the word: against each size glibc
     * could have written (the flags as found), the highest byte that
     * differs. */
    unsigned best = 8;
    for (uint64_t cand = nb; cand <= nb + 32; cand += 16) {
        uint64_t diff = (cand | (h & 7)) ^ h;
        unsigned top = 0;
        while (diff) {
            top++;
            diff >>= 8;
        }
        if (top && top < best)
            best = top;
    }
    return 9 - best; /* byte BEST - 1 of the word, 9 - BEST bytes before PTR */
}

static inline unsigned mt_glibc_size_damage(uint64_t h, uint64_t prev, uint64_t ptr, uint64_t asked)
{
    uint64_t nb = mt_glibc_request2size(asked);
    if (MT_LIKELY(mt_glibc_size_plain(h, nb)))
        return 0;
    return mt_glibc_size_damage_rest(h, prev, ptr, nb);
}

/* mt_glibc_size_damage of the block at PTR, in this process: reads the
 * two words before PTR. */
static inline unsigned mt_glibc_header_damage(uintptr_t ptr, uint64_t asked)
{
    const uint64_t *w = (const uint64_t *)ptr;
    uint64_t nb = mt_glibc_request2size(asked);
    if (MT_LIKELY(mt_glibc_size_plain(w[-1], nb)))
        return 0; /* the word before it is read only past here */
    return mt_glibc_size_damage_rest(w[-1], w[-2], ptr, nb);
}

/* The next chunk's size word after a block of glibc's whose own size word
 * is sound (mt_glibc_header_damage's 0), not a mapped one: the chunk is in
 * use, so the next one's PREV_INUSE bit (1) is set, and its size is a
 * multiple of 16, 16 at least (the top chunk's too). False when a write
 * past the block's end (past its redzone) changed it: glibc's free would
 * abort on it ("invalid next size", "double free or corruption (!prev)").
 * *AT: the word's offset from PTR. */
static inline bool mt_glibc_next_ok(uintptr_t ptr, size_t *at)
{
    const size_t *w = (const size_t *)ptr;
    size_t sz = w[-1] & ~(size_t)7;
    if (w[-1] & 2)
        return true;
    *at = sz - 8;
    size_t next = *(const size_t *)(ptr + sz - 8);
    return (next & 1) && !(next & 8) && (next & ~(size_t)7) >= 16;
}

/* mt_glibc_next_ok for the checks that are handed MAPPED (whether a range
 * lies in one writable mapping): an own size word that passes as sound
 * may still be one an aligned block's tolerance lets through, so the
 * next word is read only where it is mapped (true, unread, if not). The
 * own word, 16 bytes before PTR, must be mapped already. */
static inline bool mt_glibc_next_ok_in(uintptr_t ptr, size_t *at,
                                       bool (*mapped)(uintptr_t addr, size_t len))
{
    size_t sz = ((const size_t *)ptr)[-1] & ~(size_t)7;
    if (sz < 8 || !mapped(ptr + sz - 8, 8))
        return true;
    return mt_glibc_next_ok(ptr, at);
}

/* ---- the quarantine's rings (quarantine.c); the layout is published in
 * the state descriptor (descriptor.h) */

typedef struct {
    uintptr_t ptr;                      /* the block */
    uint64_t size;                      /* as the program asked for it; its redzone follows */
    uint64_t alloc_seq;                 /* its allocation number */
    uint64_t free_seq;                  /* the allocation number last handed out at its free */
    uint32_t alloc_stack, free_stack;   /* stack ids (0: none) */
    uint32_t alloc_thread, free_thread; /* thread numbers */
    uint64_t filled;                    /* bytes from ptr filled with MT_FREED_BYTE */
    mt_free_call call;                  /* frees it for real */
} mt_quarantine_slot;

/* A slot as a ring stores it: one cache line. The ring is written at
 * every free and read when the block leaves, 1,024 slots at least (more
 * than L1 holds), so each line of a slot costs a miss a free. The call is
 * kept apart, in the ring's calls (slot i's at calls[i]), written and read
 * only for a call that is not mt_real.next_free (MT_FC_REAL: C's free, every
 * free of a C program), so that such a free touches one line of the ring
 * (the whole record was 88 bytes, 1.4 lines). */
typedef struct {
    uintptr_t ptr;
    uint64_t size;
    uint64_t alloc_seq, free_seq;
    uint32_t alloc_stack, free_stack;
    uint32_t alloc_thread, free_thread;
    uint64_t filled;
    uint32_t shape; /* the call's: its fn, a and b in calls[i] unless MT_FC_REAL */
} __attribute__((aligned(64))) mt_quarantine_held;

typedef struct mt_quarantine_ring {
    struct mt_quarantine_ring *next; /* the list of every ring, never unlinked */
    mt_atomic(int) owner;            /* kernel thread id of the thread using it; 0: free */
    mt_atomic(int) busy;             /* 1 while the owner or a checker changes or reads it */
    uint64_t cap;                    /* slots, a power of two */
    uint64_t head, tail;             /* blocks pushed, blocks taken out: slots tail..head-1
                                        (mod cap) hold blocks, head - tail <= cap */
    uint64_t bytes;                  /* their sizes, summed */
    mt_free_call *calls;             /* cap of them, after the slots */
    mt_quarantine_held slots[];
} mt_quarantine_ring;

/* The report of S's block, written to at [FIRST, END) of it after its
 * free (past its size: its redzone of REDZONE bytes), where WHERE found it
 * (NULL: memtrace check's list fills it in). */
static inline struct mt_heap_error mt_quarantine_error(const mt_quarantine_slot *s, size_t first,
                                                       size_t end, size_t redzone,
                                                       const char *where)
{
    return (struct mt_heap_error){
        .kind = MT_HEAP_WRITE_AFTER_FREE,
        .ptr = s->ptr,
        .size = s->size,
        .offset = (int64_t)first,
        .bytes = end - first,
        .at_least = end == s->size + redzone,
        .freed = 1,
        .alloc_seq = s->alloc_seq,
        .free_seq = s->free_seq,
        .alloc_stack = s->alloc_stack,
        .free_stack = s->free_stack,
        .alloc_thread = s->alloc_thread,
        .free_thread = s->free_thread,
        .where = where,
    };
}

/* The head of the list of rings (for the state descriptor). */
mt_quarantine_ring *const *mt_quarantine_rings(void);

/* Whether the quarantine holds blocks (MEMTRACE_QUARANTINE > 0). Set at
 * start-up (mt_quarantine_init), read by the hot path. */
extern bool mt_quarantine_on MT_HIDDEN;

/* Once at start-up, after mt_config_load. */
void mt_quarantine_init(void);

/* Holds the block of F, its free by the calling thread as the freed
 * history keeps it (stamp and when unused), freed by the call C, in the
 * calling thread's ring; false when it cannot (the ring is busy or cannot
 * be mapped, the block is larger than the quarantine, the thread is
 * exiting): the caller frees it at once. Blocks pushed out are checked
 * and freed before it returns. Called with mt_busy clear. */
bool mt_quarantine_hold(const mt_freed_record *f, const mt_free_call *c);

/* For a free the live table cannot match (PTR must be a block the program
 * may free: its first byte is read): when some ring holds PTR (a second
 * free of it, or a realloc), its slot is taken out into *OUT and 1
 * returned; the caller makes OUT's call (the first free, for real) before
 * the program's own call meets the next allocator as it would without
 * memtrace (glibc aborts on a double free). -1: held in a ring another
 * thread keeps busy (the caller must not pass the call on); 0: held
 * nowhere. A hole left in a ring is skipped when it leaves. */
int mt_quarantine_take(uintptr_t ptr, mt_quarantine_slot *out);

/* Checks every block held in every ring whose busy word it can take (a
 * bounded wait) and that MAPPED says lies in mapped memory (a slot a wild
 * write damaged is skipped); FN is called with each damaged slot and the damage's
 * first and end offsets from the block's start. Returns the rings it
 * could not check. Called inside memtrace or not; FN runs with the ring
 * taken and must not free. A damaged block is filled again after FN: its
 * damage is reported once. A block whose chunk header (glibc's size word,
 * or the next chunk's) is damaged goes to HEADER_FN (NULL: not told) and
 * leaves the ring unfreed: glibc must not follow it. */
unsigned mt_quarantine_check(void (*fn)(const mt_quarantine_slot *s, size_t first, size_t end,
                                        void *ctx),
                             void (*header_fn)(const struct mt_heap_error *e, void *ctx),
                             bool (*mapped)(uintptr_t addr, size_t len), void *ctx);

/* Recording went off (turned off, or detached): the blocks held are to be
 * released, since no free is held from now on and they would otherwise
 * stay for good. Only a flag (async-signal-safe: the recording's toggle
 * is a signal handler; a detach may run in a thread stopped inside the
 * allocator); the next free that is not held, outside memtrace, releases
 * them (mt_quarantine_idle_free). */
void mt_quarantine_release_soon(void);

/* A free outside memtrace that the quarantine does not hold (recording is
 * off, or the block was not recorded): if a release is due
 * (mt_quarantine_release_soon) and recording is still off, every ring's
 * blocks (those whose busy word it can take) are checked and freed. One
 * load when none is due. */
void mt_quarantine_idle_free(void);

/* In a fork child: the one thread left keeps its own ring; the others'
 * blocks are dropped (they stay allocated, in the child never freed) and
 * their rings freed. */
void mt_quarantine_fork_child(void);

#endif
