/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tag scopes: per-thread trees of named scopes that every
 * allocation is counted in, sampled or not. The hot path's whole contract
 * with this module is the two calls below; everything else (the tree, the
 * public push/pop API, the outputs) lives behind them.
 *
 * A block carries the id mt_tag_alloc returned from its allocation to its
 * free: in the live-table record for a traced block (the top bits of its
 * seq word, live_table.h), and by whatever means the sampling mode chooses
 * for an unsampled one. Id 0 means "counted nowhere" (tags were not in use
 * when the block was allocated): its free counts nothing.
 *
 * The nodes: one array of MT_TAG_MAX nodes, mapped once (MAP_NORESERVE-like:
 * untouched pages cost nothing) when tags come into use, never moved or
 * freed; a node's id is its index, 1 .. count - 1, handed out in creation
 * order, so a parent's id is below its children's. A node belongs to the
 * thread whose tree it is in (its root): that thread alone creates its
 * nodes, links them and writes the counters of its first line, with plain
 * relaxed loads and stores (no read-modify-write, no lock). A free by
 * another thread adds to the node's second line with an atomic add (the
 * remote counters): the one line two threads write, and only for blocks
 * freed away from their thread. A reader (the outputs, gdb) adds the two.
 * Nothing is ever unlinked: a thread that ends leaves its tree.
 *
 * The two calls also keep the exact live total and peak of every traced
 * block, tags in use or not (store/live_bytes.h). */
#ifndef MT_TAGS_H
#define MT_TAGS_H

#include "base/atomic.h"
#include "base/common.h"
#include "base/hot.h"
#include "store/live_bytes.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MT_TAG_ID_BITS 16
#define MT_TAG_MAX (1u << MT_TAG_ID_BITS) /* ids 1 .. MT_TAG_MAX - 1 */
#define MT_TAG_NAME_MAX 47                /* bytes of a scope's name */
#define MT_TAG_DEPTH_MAX 64               /* scopes open at once on a thread */

typedef struct mt_tag_node {
    /* Line 1: written by the owning thread only. */
    mt_atomic(uint64_t) allocs, alloc_bytes, frees, free_bytes;
    uint32_t parent;                               /* 0 for a thread's root */
    uint32_t root;                                 /* the id of the root of this node's tree */
    mt_atomic(uint32_t) first_child, next_sibling; /* release-published links */
    uint32_t thread;                               /* memtrace's thread number of the owner */
    uint32_t depth;                                /* 0 for a root */
    /* The bits of the name's first 8 bytes up to and including its NUL,
     * or 0 for a name of 8 bytes or more: mt_tag_named_word's mask. */
    uint64_t name_mask;
    /* Line 2: the frees of other threads (atomic adds), and the name,
     * written before the node is linked. */
    mt_atomic(uint64_t) remote_frees, remote_free_bytes;
    char name[MT_TAG_NAME_MAX + 1]; /* "" for a root */
} __attribute__((aligned(MT_CACHELINE))) mt_tag_node;

_Static_assert(sizeof(mt_tag_node) == 2 * (size_t)MT_CACHELINE, "a node is two lines");

/* mt_tag_cur (this thread's current node) and mt_tag_root (its root), 0
 * = none yet: members of base/hot.h's mt_hot, so that the fast paths that
 * count a tag load them with the other hot words, through one GOT slot. */
extern mt_atomic(int) mt_tags_used MT_HIDDEN; /* read-mostly: set once, never cleared */
extern mt_tag_node *mt_tag_nodes MT_HIDDEN;   /* set before mt_tags_used */

/* This thread's root, made on its first counted allocation once tags are
 * in use; 0 when the node table is full. */
uint32_t mt_tag_thread_root(void);

/* The node side of mt_tag_alloc: an allocation of SIZE bytes in node ID
 * (not 0), one of the calling thread's. */
static inline void mt_tag_count_alloc(uint32_t id, size_t size)
{
    mt_tag_node *n = &mt_tag_nodes[id];
    mt_atomic_store_relaxed(&n->allocs, mt_atomic_load_relaxed(&n->allocs) + 1);
    mt_atomic_store_relaxed(&n->alloc_bytes, mt_atomic_load_relaxed(&n->alloc_bytes) + size);
}

/* Counts an allocation of SIZE bytes in the calling thread's current scope
 * node and returns that node's id (0 while tags are not in use: no scope
 * was ever entered and MEMTRACE_TAGS is unset). O(1), no lock, no line
 * written by another thread (but for a free from there, see above). A
 * thread's first call with tags in use makes its root (cold: one id from
 * the shared counter, mt_thread_number; no heap, no lock). Not from a
 * signal handler that interrupted this thread's own counting (the
 * owner's counters are plain read-then-write). */
static inline uint32_t mt_tag_alloc(size_t size)
{
    mt_live_alloc(size); /* every traced block passes here: live_bytes.h */
    uint32_t id = mt_tag_cur;
    if (MT_LIKELY(id == 0)) {
        if (MT_LIKELY(!mt_atomic_load_relaxed(&mt_tags_used)))
            return 0;
        id = mt_tag_thread_root();
        if (id == 0)
            return 0;
    }
    mt_tag_count_alloc(id, size);
    return id;
}

/* mt_tag_alloc for a caller that makes no call on its fast path
 * (capture/sample_fast.h): true with *ID set, or false with nothing
 * counted when mt_tag_alloc would make a call (the thread's root to make,
 * a live-bytes flush): the caller then calls mt_tag_alloc. */
static inline bool mt_tag_alloc_try(size_t size, uint32_t *id)
{
    uint32_t cur = mt_tag_cur;
    if (cur == 0 && MT_UNLIKELY(mt_atomic_load_relaxed(&mt_tags_used)))
        return false;
    if (MT_UNLIKELY(!mt_live_alloc_try(size)))
        return false;
    if (cur != 0)
        mt_tag_count_alloc(cur, size);
    *id = cur;
    return true;
}

/* The node side of mt_tag_free (its live bytes aside), for a caller that
 * saw mt_tags_used set by an acquire load: the node array is mapped.
 * Inlined always: sample_fast.h's free, a leaf, must not call it. */
static inline __attribute__((always_inline)) void mt_tag_count_free_used(uint32_t id, size_t size)
{
    if (MT_LIKELY(id == 0))
        return;
    mt_tag_node *n = &mt_tag_nodes[id & (MT_TAG_MAX - 1)];
    if (MT_LIKELY(n->root == mt_tag_root)) {
        mt_atomic_store_relaxed(&n->frees, mt_atomic_load_relaxed(&n->frees) + 1);
        mt_atomic_store_relaxed(&n->free_bytes, mt_atomic_load_relaxed(&n->free_bytes) + size);
    } else {
        mt_atomic_add_relaxed(&n->remote_frees, 1);
        mt_atomic_add_relaxed(&n->remote_free_bytes, size);
    }
}

/* The node side of mt_tag_free (its live bytes aside). */
static inline void mt_tag_count_free(uint32_t id, size_t size)
{
    if (MT_LIKELY(id == 0) || mt_tag_nodes == NULL)
        return;
    mt_tag_count_free_used(id, size);
}

/* Counts the free of a SIZE-byte block allocated in node ID (from
 * mt_tag_alloc), whichever thread frees it. O(1), no lock: the owner's
 * plain counters from the owner, an atomic add on the node's second line
 * from another thread. */
static inline void mt_tag_free(uint32_t id, size_t size)
{
    mt_live_free(size);
    mt_tag_count_free(id, size);
}

/* mt_tag_free without a call: false, with nothing counted, when it would
 * flush the live bytes (the caller then calls mt_tag_free). USED: the
 * caller saw mt_tags_used set (an acquire load; a constant where it is
 * inlined), so the node array need not be tested. */
static inline __attribute__((always_inline)) bool mt_tag_free_try(uint32_t id, size_t size,
                                                                  bool used)
{
    if (MT_UNLIKELY(!mt_live_free_try(size)))
        return false;
    if (used)
        mt_tag_count_free_used(id, size);
    else
        mt_tag_count_free(id, size);
    return true;
}

/* A block of node ID resized in place from OLD to NEW bytes (jemalloc's
 * xallocx): its node's live bytes follow, as a free of OLD - NEW bytes
 * (negative when it grew; the counters wrap), counted where mt_tag_free
 * counts; no free or allocation is counted. */
static inline void mt_tag_resized(uint32_t id, size_t old, size_t new_size)
{
    mt_live_free(old);
    mt_live_alloc(new_size);
    mt_tag_node *nodes = mt_tag_nodes;
    if (id == 0 || nodes == NULL)
        return;
    mt_tag_node *n = &nodes[id & (MT_TAG_MAX - 1)];
    uint64_t delta = (uint64_t)old - (uint64_t)new_size;
    if (n->root == mt_tag_root)
        mt_atomic_store_relaxed(&n->free_bytes, mt_atomic_load_relaxed(&n->free_bytes) + delta);
    else
        mt_atomic_add_relaxed(&n->remote_free_bytes, delta);
}

/* Enters scope NAME on the calling thread (a child of its current node,
 * made on first entry). Returns NULL, or why nothing changed (a "memtrace:
 * ..." line without the prefix and newline). Found through the thread's
 * cache (mt_tag_push_known) or else among the current node's children,
 * and then remembered there. */
const char *mt_tag_push(const char *name);

/* Each thread's cache of the children it entered, so that entering a
 * scope again is O(1) (malloc-tag's scopes are entered in loops): slot
 * mt_tag_slot(CUR, NAME) holds the id of the node a push of NAME (its
 * address) found or made under CUR, or 0. Written and read by its thread
 * alone. A hint, never trusted: the bytes at NAME may have changed since
 * and two (node, address) pairs may share a slot, so a hit is checked
 * (the node's parent is the current node, its name NAME's bytes); nodes
 * never move and are never unlinked, so nothing is ever invalidated. */
#define MT_TAG_CACHE_BITS 6
#define MT_TAG_CACHE_SLOTS (1u << MT_TAG_CACHE_BITS)
extern MT_TLS uint32_t mt_tag_cache[MT_TAG_CACHE_SLOTS] MT_HIDDEN;

static inline unsigned mt_tag_slot(uint32_t cur, const char *name)
{
    /* 32 bits of each are enough for a hint (a name's address's high
     * bits rarely differ between the names of one program), and a 32-bit
     * multiply takes its constant inline. */
    uint32_t key = (uint32_t)(uintptr_t)name ^ cur * 0x85EBCA6Bu;
    return (key * 0x9E3779B1u) >> (32 - MT_TAG_CACHE_BITS);
}

/* Whether node N is named NAME (not NULL). Reads NAME up to the first
 * difference or NUL only: a node's name ends within its array. */
static inline bool mt_tag_named(const mt_tag_node *n, const char *name)
{
    for (const char *a = n->name;; a++, name++) {
        if (*a != *name)
            return false;
        if (*a == '\0')
            return true;
    }
}

/* The mask of a node whose name is LEN bytes long (mt_tag_node's
 * name_mask). */
static inline uint64_t mt_tag_name_mask(size_t len)
{
    return len < 8 ? ~(uint64_t)0 >> (8 * (7 - len)) : 0;
}

/* mt_tag_named for a cache hit's check, a word at a time where it can:
 * a name of N's below 8 bytes is compared as one load of NAME's first 8
 * bytes, masked to N's name and its NUL (the bytes past NAME's NUL are
 * not compared, and are read only within NAME's page, which its first
 * byte being readable makes readable: the load never faults). A name of
 * 8 bytes or more, or a NAME within 8 bytes of its page's end, is
 * compared byte by byte. The same answer as mt_tag_named. */
static inline bool mt_tag_named_word(const mt_tag_node *n, const char *name)
{
#if defined(__x86_64__)
    uint64_t mask = n->name_mask;
    if (MT_LIKELY(mask != 0) && MT_LIKELY(((uintptr_t)name & 4095) <= 4096 - 8)) {
        uint64_t a, b;
        /* An asm load: NAME's object may end before 8 bytes (the compiler
         * must not see a read past it); the page test above keeps it safe. */
        __asm__("movq %1, %0" : "=r"(a) : "m"(*(const char(*)[8])name));
        memcpy(&b, n->name, sizeof b);
        return ((a ^ b) & mask) == 0;
    }
#endif
    return mt_tag_named(n, name);
}

/* mt_tag_push(NAME) when the cache knows the child: enters it and returns
 * true (no call, no lock, no write but mt_tag_cur, nothing to say);
 * false changes nothing, and mt_tag_push decides (every refused NAME is
 * a miss: NULL is tested, and no child is named "" or longer than
 * MT_TAG_NAME_MAX; a child exists only below MT_TAG_DEPTH_MAX). An empty
 * slot holds 0, and node 0 (never handed out) is no one's child. */
static inline bool mt_tag_push_known(const char *name)
{
    uint32_t cur = mt_tag_cur;
    if (MT_UNLIKELY(cur == 0 || name == NULL))
        return false;
    uint32_t id = mt_tag_cache[mt_tag_slot(cur, name)];
    const mt_tag_node *n = &mt_tag_nodes[id];
    if (n->parent != cur || !mt_tag_named_word(n, name))
        return false;
    mt_tag_cur = id;
    return true;
}

/* Leaves the current scope; NULL, or why nothing changed. mt_tag_cur is 0
 * only while mt_tag_root is (they are set together), and no scope is
 * entered when it is the root. */
static inline const char *mt_tag_pop(void)
{
    uint32_t cur = mt_tag_cur;
    if (MT_UNLIKELY(cur == mt_tag_root))
        return "memtrace_tag_pop: no scope entered on this thread; nothing changed";
    mt_tag_cur = mt_tag_nodes[cur].parent;
    return NULL;
}

/* Puts tags in use from now (MEMTRACE_TAGS set at start-up): every thread's
 * allocations are counted, in its root until it enters a scope. False
 * when the node table cannot be mapped. */
bool mt_tags_start(void);

/* The nodes made so far: ids 1 .. *COUNT - 1 of the returned array (NULL
 * and 0 before tags came into use). */
const mt_tag_node *mt_tag_table(uint32_t *count);


/* For the state descriptor: the addresses of the node array's pointer and
 * of the count of ids handed out (a uint32_t: ids below it are made, or
 * being made: a node whose root is 0 is not filled in yet). */
const void *mt_tag_nodes_word(void);
const void *mt_tag_count_word(void);

#endif
