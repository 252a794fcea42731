/* Tag scopes (issue 30): per-thread trees of named scopes that every
 * allocation is counted in, sampled or not. The hot path's whole contract
 * with this module is the two calls below; everything else (the tree, the
 * public push/pop API, the outputs) lives behind them.
 *
 * A block carries the id mt_tag_alloc returned from its allocation to its
 * free: in the live-table record for a traced block, and by whatever means
 * the sampling mode chooses for an unsampled one. Id 0 means "counted
 * nowhere" (tags were never used when the block was allocated): its free
 * counts nothing. */
#ifndef MT_TAGS_H
#define MT_TAGS_H

#include <stddef.h>
#include <stdint.h>

/* Counts an allocation of SIZE bytes in the calling thread's current scope
 * node and returns that node's id (0 while no scope was ever entered in the
 * process). O(1), no lock, no line written by another thread. */
static inline uint32_t mt_tag_alloc(size_t size)
{
    (void)size;
    return 0;
}

/* Counts the free of a SIZE-byte block allocated in node ID (from
 * mt_tag_alloc), whichever thread frees it. O(1), no lock. */
static inline void mt_tag_free(uint32_t id, size_t size)
{
    (void)id;
    (void)size;
}

#endif
