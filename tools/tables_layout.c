/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace_state read and checked (tables.h, mt_tables_read_layout): what
 * gdb/memtrace.py's _check_layout did, with the same "memtrace:" reasons.
 * Every size and count within the bounds below and consistent with the
 * others, every field inside its record and aligned: the bounds are far
 * above what the library publishes (src/runtime/descriptor.c) and low
 * enough that no damaged value makes the reader read or hold more than a
 * few MiB at once, or loop for long. */
#include "tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MAX_STATE_SIZE 4096u /* bytes of memtrace_state */
#define MAX_SHARD_BITS 12u
#define MAX_SHARD_SIZE 1024u /* bytes of a shard header */
#define MAX_HEADER 4096u     /* offset of a field in a shard or slots header */
#define MAX_RECORD 256u      /* bytes of a live entry or a freed-history record */
#define MAX_CHUNK_BITS 30u
#define MAX_FRAMES_OFFSET 64u /* words */
#define MAX_DEPTH_BITS 16u
#define MAX_FREED ((uint64_t)1 << 26) /* MEMTRACE_FREED's maximum */
#define MAX_THREADS ((uint64_t)1 << 20)
#define MAX_THREAD_ENTRY 4096u
#define MAX_NAME 256u
#define MAX_SEQ_BATCH ((uint64_t)1 << 20)
#define MIN_QUARANTINE_SLOT 64u /* bytes of a quarantine slot (heap_check.c reads it whole) */
#define MAX_QUARANTINE_SLOT 4096u

#define CORRUPT "memtrace_state looks corrupted ("

#define D(name) (t->d.name)
#define FAIL(...) mt_tables_fail(t, __VA_ARGS__) /* T: the tables at hand */

static bool at_most(mt_tables *t, const char *name, uint64_t v, uint64_t top, uint64_t low)
{
    if (v > top)
        return FAIL(CORRUPT "%s %" PRIu64 ", more than %" PRIu64 ")", name, v, top);
    if (v < low)
        return FAIL(CORRUPT "%s %" PRIu64 ", less than %" PRIu64 ")", name, v, low);
    return true;
}
#define AT_MOST(name, top, low) at_most(t, #name, D(name), top, low)

static bool record_size(mt_tables *t, const char *name, uint64_t v)
{
    if (!at_most(t, name, v, MAX_RECORD, 8))
        return false;
    if (v % 8)
        return FAIL(CORRUPT "%s %" PRIu64 ", not a multiple of 8)", name, v);
    return true;
}
#define RECORD_SIZE(name) record_size(t, #name, D(name))

/* Field NAME (at V, WIDTH bytes) inside a record of SIZE bytes, which the
 * checks before made at least WIDTH. */
static bool field(mt_tables *t, const char *name, uint64_t v, unsigned width, const char *size_name,
                  uint64_t size)
{
    if (v % width || v > size - width)
        return FAIL(CORRUPT "%s %" PRIu64 ", not %s %u-byte field inside %s %" PRIu64 ")", name, v,
                    width == 8 ? "an" : "a", width, size_name, size);
    return true;
}
#define FIELD(name, width, size) field(t, #name, D(name), width, #size, D(size))

static bool address(mt_tables *t, uint64_t v, const char *what)
{
    return v ? true : FAIL(CORRUPT "%s at 0x0)", what);
}

/* The packed slots (version 2): three words, the address's bits and the
 * size's low bits leaving room for the thread word (descriptor.h). */
static bool check_slot_layout(mt_tables *t)
{
    if (D(live_slot_size) != 24)
        return FAIL(CORRUPT "live_slot_size %" PRIu64 ", not 24)", D(live_slot_size));
    return AT_MOST(live_slot_ptr_bits, 63, 32) && AT_MOST(live_slot_size_low, 6, 0) &&
           FIELD(live_side_offset, 8, live_shard_size) &&
           FIELD(live_side_count_offset, 8, live_shard_size) &&
           AT_MOST(live_side_entries_offset, MAX_HEADER, 0);
}

static bool check_live(mt_tables *t)
{
    if (!AT_MOST(live_shard_bits, MAX_SHARD_BITS, 0))
        return false;
    if (D(live_shard_count) != (uint64_t)1 << D(live_shard_bits))
        return FAIL(CORRUPT "live_shard_count %" PRIu64 ", not 1 << live_shard_bits)",
                    D(live_shard_count));
    return address(t, D(live_shards), "live shards") &&
           AT_MOST(live_shard_size, MAX_SHARD_SIZE, 8) &&
           FIELD(live_lock_offset, 4, live_shard_size) &&
           FIELD(live_count_offset, 8, live_shard_size) &&
           FIELD(live_slots_offset, 8, live_shard_size) &&
           AT_MOST(live_log2cap_offset, MAX_HEADER, 0) &&
           AT_MOST(live_entries_offset, MAX_HEADER, 0) && AT_MOST(live_hash_shift, 63, 0) &&
           RECORD_SIZE(entry_size) && FIELD(entry_ptr, 8, entry_size) &&
           FIELD(entry_size_field, 8, entry_size) && FIELD(entry_seq, 8, entry_size) &&
           FIELD(entry_stack, 4, entry_size) && FIELD(entry_thread, 4, entry_size) &&
           AT_MOST(entry_thread_bits, 32, 0) && AT_MOST(live_region_shift, 63, 0) &&
           AT_MOST(live_group_bits, D(live_shard_bits), 0) &&
           AT_MOST(live_cap_offset, MAX_HEADER, 0) && check_slot_layout(t);
}

static bool check_stacks(mt_tables *t)
{
    if (!address(t, D(stack_chunks), "stack chunk table") ||
        !AT_MOST(stack_chunk_bits, MAX_CHUNK_BITS, 1) ||
        /* Stack ids are 32-bit: chunk << chunk_bits | word. */
        !AT_MOST(stack_max_chunks, (uint64_t)1 << (32 - D(stack_chunk_bits)), 1) ||
        !AT_MOST(stack_frames_offset, MAX_FRAMES_OFFSET, 0))
        return false;
    uint64_t mask = D(stack_depth_mask), bit = D(stack_present_bit);
    if (mask == 0 || (mask & (mask + 1)) || mask >> MAX_DEPTH_BITS)
        return FAIL(CORRUPT "stack_depth_mask 0x%" PRIx64 ", not a mask of 1 to %u bits)", mask,
                    MAX_DEPTH_BITS);
    if (bit == 0 || (bit & (bit - 1)) || (bit & mask))
        return FAIL(CORRUPT "stack_present_bit 0x%" PRIx64 ", not one bit above stack_depth_mask)",
                    bit);
    return address(t, D(stack_count), "stack count");
}

static bool check_rest(mt_tables *t)
{
    if (!AT_MOST(freed_capacity, MAX_FREED, 0) ||
        (D(freed_capacity) && !address(t, D(freed_ring), "freed history")) ||
        !RECORD_SIZE(freed_record_size) || !FIELD(freed_stamp, 8, freed_record_size) ||
        !FIELD(freed_ptr, 8, freed_record_size) || !FIELD(freed_size, 8, freed_record_size) ||
        !FIELD(freed_alloc_seq, 8, freed_record_size) ||
        !FIELD(freed_free_seq, 8, freed_record_size) ||
        !FIELD(freed_alloc_stack, 4, freed_record_size) ||
        !FIELD(freed_free_stack, 4, freed_record_size) ||
        !FIELD(freed_alloc_thread, 4, freed_record_size) ||
        !FIELD(freed_free_thread, 4, freed_record_size) || !AT_MOST(threads_max, MAX_THREADS, 0) ||
        !AT_MOST(threads_entry_size, MAX_THREAD_ENTRY, 4) ||
        !AT_MOST(threads_name_size, MAX_NAME, 1) || !FIELD(threads_tid, 4, threads_entry_size))
        return false;
    if (D(threads_name) > D(threads_entry_size) - D(threads_name_size))
        return FAIL(CORRUPT "threads_name %" PRIu64 ", not a %" PRIu64
                            "-byte field inside threads_entry_size %" PRIu64 ")",
                    D(threads_name), D(threads_name_size), D(threads_entry_size));
    /* Words added later: 0 from an older library (one push number at a
     * time, no clock stamp). */
    if (!D(freed_block))
        t->d.freed_block = 1;
    if (!AT_MOST(freed_block, MAX_FREED, 1) ||
        (D(freed_when) && !FIELD(freed_when, 8, freed_record_size)))
        return false;
    if (D(seq_discarded) &&
        (!AT_MOST(seq_batch, MAX_SEQ_BATCH, 1) || !FIELD(threads_seq_next, 8, threads_entry_size) ||
         !FIELD(threads_seq_end, 8, threads_entry_size)))
        return false;
    if (D(freed_capacity) % D(freed_block))
        return FAIL(CORRUPT "freed_block %" PRIu64 ", not a divisor of freed_capacity %" PRIu64 ")",
                    D(freed_block), D(freed_capacity));
    return address(t, D(threads_highest), "thread count") &&
           address(t, D(seq_counter), "allocation counter");
}

/* The quarantine's rings and slots (heap_check.c's read_ring): every
 * field of a slot inside the slot, as the live table's entries are; a
 * ring's words at bounded offsets. Nothing to check without rings (an
 * older library, or redzones off: quarantine_rings 0). */
static bool check_quarantine(mt_tables *t)
{
    if (!D(quarantine_rings))
        return true;
    return AT_MOST(quarantine_ring_next, MAX_HEADER, 0) &&
           AT_MOST(quarantine_ring_owner, MAX_HEADER, 0) &&
           AT_MOST(quarantine_ring_busy, MAX_HEADER, 0) &&
           AT_MOST(quarantine_ring_cap, MAX_HEADER, 0) &&
           AT_MOST(quarantine_ring_head, MAX_HEADER, 0) &&
           AT_MOST(quarantine_ring_tail, MAX_HEADER, 0) &&
           AT_MOST(quarantine_ring_slots, MAX_HEADER, 0) &&
           AT_MOST(quarantine_slot_size, MAX_QUARANTINE_SLOT, MIN_QUARANTINE_SLOT) &&
           FIELD(quarantine_slot_ptr, 8, quarantine_slot_size) &&
           FIELD(quarantine_slot_size_field, 8, quarantine_slot_size) &&
           FIELD(quarantine_slot_alloc_seq, 8, quarantine_slot_size) &&
           FIELD(quarantine_slot_free_seq, 8, quarantine_slot_size) &&
           FIELD(quarantine_slot_filled, 8, quarantine_slot_size) &&
           FIELD(quarantine_slot_alloc_stack, 4, quarantine_slot_size) &&
           FIELD(quarantine_slot_free_stack, 4, quarantine_slot_size) &&
           FIELD(quarantine_slot_alloc_thread, 4, quarantine_slot_size) &&
           FIELD(quarantine_slot_free_thread, 4, quarantine_slot_size);
}

static bool read_state(mt_tables *t)
{
    const char *head = mt_tables_read_at(t, t->addr, 16);
    if (!head)
        return FAIL(CORRUPT "unreadable at %#" PRIxPTR ")", t->addr);
    char magic[8];
    uint32_t version, size;
    memcpy(magic, head, 8);
    memcpy(&version, head + 8, 4);
    memcpy(&size, head + 12, 4);
    if (memcmp(magic, "\0\0\0\0\0\0\0\0", 8) == 0)
        return FAIL("memtrace has not started in this process yet (no allocation so far)");
    if (memcmp(magic, MT_STATE_MAGIC, 8) != 0) {
        char shown[8 * 4 + 1], *p = shown;
        for (int i = 0; i < 8; i++) {
            unsigned char c = (unsigned char)magic[i];
            p += sprintf(p, c >= 32 && c < 127 && c != '"' && c != '\\' ? "%c" : "\\x%02x", c);
        }
        return FAIL(CORRUPT "magic \"%s\", not \"MEMTRACE\")", shown);
    }
    if (version != MT_STATE_VERSION)
        return FAIL("memtrace_state has version %" PRIu32 "; this helper reads version %d", version,
                    MT_STATE_VERSION);
    /* The words every version 1 library has; those added later read as 0. */
    size_t need = offsetof(struct memtrace_state, freed_pushed);
    if (size < need)
        return FAIL(CORRUPT "size %" PRIu32 ", less than %zu)", size, need);
    if (size > MAX_STATE_SIZE)
        return FAIL(CORRUPT "size %" PRIu32 ", more than %u)", size, MAX_STATE_SIZE);
    size_t words = (size - 16) / 8, known = (sizeof t->d - 16) / 8;
    const char *raw = mt_tables_read_at(t, t->addr + 16, 8 * words);
    if (!raw)
        return FAIL(CORRUPT "unreadable at %#" PRIxPTR ")", t->addr);
    memset(&t->d, 0, sizeof t->d);
    memcpy((char *)&t->d + 16, raw, 8 * (words < known ? words : known));
    memcpy(t->d.magic, magic, 8);
    t->d.version = version;
    t->d.size = size;
    return true;
}

/* The snapshots' slots (table_answers.c): a bounded table, each slot's
 * mark and name inside it. Nothing to check from an older library. */
static bool check_snapshots(mt_tables *t)
{
    if (!D(snapshots))
        return true;
    return AT_MOST(snapshot_count, 4096, 1) && AT_MOST(snapshot_size, 4096, 16) &&
           AT_MOST(snapshot_name_size, 64, 2) && AT_MOST(snapshot_name, 4096 - 64, 8) &&
           (D(snapshot_name) + D(snapshot_name_size) <= D(snapshot_size) ||
            FAIL(CORRUPT "snapshot_name %" PRIu64 " + %" PRIu64 " past snapshot_size %" PRIu64 ")",
                 D(snapshot_name), D(snapshot_name_size), D(snapshot_size)));
}

bool mt_tables_read_layout(mt_tables *t)
{
    return read_state(t) && check_live(t) && check_stacks(t) && check_rest(t) &&
           check_quarantine(t) && check_snapshots(t);
}
