/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state descriptor: one exported symbol, memtrace_state, that tells a
 * debugger where memtrace's tables are and how they are laid out, so that
 * gdb/memtrace.py can answer from a core file or a stopped process by
 * reading memory only (no call into the process). */
#ifndef MT_DESCRIPTOR_H
#define MT_DESCRIPTOR_H

#include <stdint.h>

#define MT_STATE_MAGIC "MEMTRACE"
#define MT_STATE_VERSION 2

/* Version 2: the live table's slots are packed in 24 bytes (live_slot_*
 * at the end; version 1's were entries of entry_size bytes, which a
 * reader of version 2 refuses, and a reader of version 1 refuses
 * version 2). Every field after the header is a 64-bit word, so a reader
 * needs no C struct rules: word i is at byte 16 + 8 * i. Addresses are in
 * the traced process. Offsets and sizes are in bytes unless said. A reader
 * must check magic (written last) and version, and may rely on size to
 * skip words added at the end by later versions of the same version. */
struct memtrace_state {
    char magic[8];    /* "MEMTRACE" once filled in, zeroes before */
    uint32_t version; /* MT_STATE_VERSION */
    uint32_t size;    /* sizeof(struct memtrace_state) */

    /* Live table: shard_count shards of shard_size bytes at shards. A shard
     * holds a lock word (nonzero: held), a record count and a pointer to a
     * slots mapping: a log2 capacity word then 1 << log2cap entries. Slot
     * of address P: h = (P >> hash_shift) * hash_multiplier (mod 2^64);
     * shard = h >> (64 - shard_bits); home = (h << shard_bits) >> (64 -
     * log2cap); linear probing; ptr 0 is an empty slot. A library with
     * live_region_shift (at the end) nonzero chooses the shard by region
     * instead: see there; one with live_cap_offset (at the end) nonzero
     * gives capacities as counts, with their own home: see there. */
    uint64_t live_shards, live_shard_count, live_shard_bits, live_shard_size;
    uint64_t live_lock_offset, live_count_offset, live_slots_offset;
    uint64_t live_log2cap_offset, live_entries_offset;
    uint64_t live_hash_shift, live_hash_multiplier;
    /* A whole record (a shard's side records, live_side_* at the end): its
     * fields' offsets within entry_size bytes. */
    uint64_t entry_size, entry_ptr, entry_size_field, entry_seq, entry_stack, entry_thread;

    /* Stack store: stack_chunks is an array of stack_max_chunks pointers to
     * chunks of 64-bit words (NULL past the last). Stack id S is word S &
     * ((1 << chunk_bits) - 1) of chunk S >> chunk_bits: a header word
     * (present bit, depth = header & depth_mask) and, stack_frames_offset
     * words after it, depth return addresses, innermost first. */
    uint64_t stack_chunks, stack_max_chunks, stack_chunk_bits;
    uint64_t stack_frames_offset, stack_depth_mask, stack_present_bit;
    uint64_t stack_count; /* address of a uint32_t: distinct stacks */

    /* Freed history: a ring of freed_capacity records of freed_record_size
     * bytes at freed_ring (0 if disabled). The record of push number i
     * (from 0) is in slot i % capacity with stamp i + 1 once written (push
     * numbers are not in time order across threads: freed_when is); stamp 0 =
     * never written, top bit set = being written (MT_FREED_WRITING in
     * freed_history.h). A reader trusts a slot only with the exact stamp of
     * the push it expects there. */
    uint64_t freed_ring, freed_capacity, freed_record_size;
    uint64_t freed_stamp, freed_ptr, freed_size, freed_alloc_seq, freed_free_seq;
    uint64_t freed_alloc_stack, freed_free_stack, freed_alloc_thread, freed_free_thread;

    /* Threads: thread number N (from 1) is entry N - 1 of threads (0 if not
     * mapped), threads_max entries of threads_entry_size bytes: a uint32_t
     * kernel tid and a NUL-terminated name ("" = none). */
    uint64_t threads, threads_max, threads_entry_size, threads_tid, threads_name;
    uint64_t threads_name_size;
    uint64_t threads_highest; /* address of a uint32_t: highest number */

    uint64_t seq_counter; /* address of a uint64_t: the next allocation number
                             (from a library with seq_discarded: the numbers
                             handed out to the threads' batches, plus one) */

    /* Added later in version 1 (a reader checks size before using them). */
    uint64_t freed_pushed;      /* address of a uint64_t: pushes begun so far; only
                                   the min(pushed, capacity) newest slots can hold
                                   records. 0 from a library that hands out push
                                   numbers in blocks (freed_blocks): a reader that
                                   does not know freed_blocks then finds the
                                   newest stamp in the ring */
    uint64_t unwind_fallbacks;  /* address of an unsigned long (64-bit): captures
                                   the cfi unwinder handed to libunwind */
    uint64_t entry_thread_bits; /* the thread number is the low entry_thread_bits
                                   bits of an entry's thread word, the way the
                                   block was allocated (0 malloc & co., 1 new,
                                   2 new[]) the bits above; 0: all 32 bits are
                                   the thread (an older library) */
    uint64_t version_string;    /* address of the library's version, a
                                   NUL-terminated string ("0.1.0") */
    uint64_t recording;         /* address of the recording words (recording.h's
                                   mt_recording_words: on, ever_off, seq, sec,
                                   64-bit each): since when memtrace records */
    uint64_t contended;         /* address of a uint64_t: contended lock waits and
                                   failed compare-and-swaps on the hot path
                                   (base/lock.h's mt_contended) */
    uint64_t freed_blocks;      /* address of a uint64_t: blocks of freed_block
                                   push numbers handed out so far (threads take
                                   them a block at a time, freed_history.h); only
                                   the min(blocks * freed_block, capacity) newest
                                   push numbers' slots can hold records */
    uint64_t freed_block;       /* push numbers per block; divides freed_capacity */
    uint64_t freed_when;        /* offset in a freed record of its 64-bit clock
                                   stamp: newest first is by it, then by stamp */
    /* Allocation numbers are taken by the threads in batches of at most
     * seq_batch from *seq_counter (threads.h); thread N's slot holds its
     * batch: the 64-bit words at threads_seq_next (the next number it
     * hands out) and threads_seq_end (the end of its batch). Allocations
     * recorded = *seq_counter - 1 - *seq_discarded - the sum over the
     * threads of seq_end - seq_next (where not above seq_batch). */
    uint64_t seq_discarded; /* address of a uint64_t: numbers given up */
    uint64_t seq_batch, threads_seq_next, threads_seq_end;

    /* Heap errors (capture/quarantine.h). Every live block (every record
     * of the live table) is followed by redzone_size bytes (0: redzones
     * off) that hold redzone_byte while nothing wrote past its end: the
     * redzone is [ptr + size, ptr + size + redzone_size). Freed blocks wait
     * in per-thread quarantine rings before they are freed for real:
     * quarantine_rings is the address of a pointer to the first ring
     * (NULL: none yet), each ring's pointer at quarantine_ring_next names
     * the next (NULL ends the list). In a ring, 64-bit words cap (slots),
     * head and tail (blocks pushed, taken out): slots tail .. head - 1,
     * each at quarantine_ring_slots + (i % cap) * quarantine_slot_size,
     * hold blocks (head - tail <= cap); owner (int32, kernel tid, 0 = the
     * ring is free) and busy (int32, nonzero while a thread changes it:
     * the ring may then be stale). A slot: the block's ptr and size
     * (64-bit), alloc_seq and free_seq (64-bit), alloc_stack, free_stack,
     * alloc_thread, free_thread (32-bit) and filled (64-bit): its first
     * filled bytes hold freed_byte, its redzone redzone_byte, unless
     * something wrote to it after its free. */
    uint64_t redzone_size, redzone_byte, freed_byte;
    uint64_t quarantine_rings, quarantine_ring_next, quarantine_ring_owner, quarantine_ring_busy;
    uint64_t quarantine_ring_cap, quarantine_ring_head, quarantine_ring_tail;
    uint64_t quarantine_ring_slots, quarantine_slot_size, quarantine_slot_ptr;
    uint64_t quarantine_slot_size_field, quarantine_slot_alloc_seq, quarantine_slot_free_seq;
    uint64_t quarantine_slot_alloc_stack, quarantine_slot_free_stack;
    uint64_t quarantine_slot_alloc_thread, quarantine_slot_free_thread, quarantine_slot_filled;
    uint64_t heap_errors; /* address of a uint64_t: errors reported so far, bad frees too */
    /* The guard pages' pool (capture/guard.h): guard_pool is the address of
     * a uint64_t holding the pool's first address, guard_pool_size of one
     * holding its length in bytes (0: no pool). Blocks in it have no
     * redzone, and its freed pages are inaccessible. */
    uint64_t guard_pool, guard_pool_size;
    /* Sampling (MEMTRACE_SAMPLE, capture/sample.h): the mean bytes between
     * sampled blocks, 0 when every block is traced. Only sampled blocks
     * are in the live table; an estimate scales a sampled block of SIZE
     * bytes by 1 / (1 - exp(-SIZE / sample_rate)). */
    uint64_t sample_rate;
    /* Tag scopes (tags/tags.h). A live record's seq word holds the
     * allocation number in its low entry_seq_bits bits (0: all 64) and the
     * block's tag node id above them. tag_nodes is the address of a
     * pointer to the node array (NULL: tags never in use), tag_count of a
     * uint32_t: ids below it are handed out (at most tag_max). Node ID is
     * at array + ID * tag_node_size: 64-bit allocs, alloc_bytes, frees and
     * free_bytes (the owner's), remote_frees and remote_free_bytes (other
     * threads'); 32-bit parent (0: a thread's root), root (0: not filled
     * in yet), thread (number); a NUL-terminated name of at most
     * tag_name_size bytes ("" for a root). A node's live bytes are
     * alloc_bytes - free_bytes - remote_free_bytes. */
    uint64_t entry_seq_bits;
    uint64_t tag_nodes, tag_count, tag_max, tag_node_size, tag_name_size;
    uint64_t tag_allocs, tag_alloc_bytes, tag_frees, tag_free_bytes;
    uint64_t tag_remote_frees, tag_remote_free_bytes, tag_parent, tag_root, tag_thread, tag_name;
    /* The live table's shards by address region (0: by hash alone, as at
     * the top): with g = live_group_bits, shard = ((P >> live_region_shift)
     * << g | h >> (64 - g)) mod live_shard_count (h >> 64 is 0) and home =
     * (h << g) >> (64 - log2cap). */
    uint64_t live_region_shift, live_group_bits;
    /* Nonzero: a slots mapping holds any number of entries, cap, the
     * 64-bit word at live_cap_offset (live_log2cap_offset names the same
     * word, so a reader of log2 capacities finds a value past any it
     * accepts); home = ((h << g) * cap) >> 64, the high half of the 128-bit
     * product (g: live_group_bits, or live_shard_bits without regions),
     * and the probe goes on from cap - 1 to 0. */
    uint64_t live_cap_offset;
    /* The exact live total and peak (store/live_bytes.h), in bytes of every
     * traced block, sampled or not: live_exact and live_exact_peak are the
     * addresses of int64_t words, the sums the threads have flushed; each
     * thread still running may hold up to live_exact_slack bytes more or
     * less, not flushed yet. */
    uint64_t live_exact, live_exact_peak, live_exact_slack;
    /* Snapshots (`memtrace snapshot NAME` in gdb): snapshots is the
     * address of snapshot_count slots of snapshot_size bytes, each a
     * 64-bit mark at offset 0 (0: a free slot; else the first allocation
     * number the snapshot does not hold: the blocks numbered from it on
     * were allocated after it) and a NUL-terminated name of at most
     * snapshot_name_size bytes at offset snapshot_name. The library
     * never writes them: gdb does, in the stopped process, and adds 1 to
     * the 32-bit word at seq_epoch (threads.h's mt_seq.epoch), so that
     * every thread takes its next numbers from the shared counter, above
     * the mark. Kept in the process, they are read on its core too. */
    uint64_t snapshots, snapshot_count, snapshot_size, snapshot_name, snapshot_name_size;
    uint64_t seq_epoch;
    /* The last error reports' facts (report/error_record.h): error_records
     * is the address of a ring of error_records_max records of
     * error_record_size bytes (the layout of mt_error_record when that
     * size is its size), error_record_count of a uint64_t: records
     * written, error N (1 on) in slot (N - 1) % error_records_max while
     * its number word says N. */
    uint64_t error_records, error_records_max, error_record_size, error_record_count;
    /* What the program told the leak check (leak/leak_client.h), so that
     * a check out of the process honours it as one inside does:
     * client_ignored is the address of client_ignored_max entries of two
     * uint64_t, {block address, allocation number} of a block
     * memtrace_ignore_object named (a root while a live block of that
     * address has that number), the first N in use, N the uint64_t at
     * client_ignored_count; client_roots the same for the regions
     * memtrace_register_root_region named, {lo, hi}. */
    uint64_t client_ignored, client_ignored_max, client_ignored_count;
    uint64_t client_roots, client_roots_max, client_roots_count;
    /* The live table's slots (version 2): live_slot_size bytes, three
     * 64-bit words. Word 0: the address in its low live_slot_ptr_bits bits
     * (0: an empty slot), the size >> live_slot_size_low above them; word
     * 8: the seq word (as entry_seq's); word 16: the stack id in its low
     * 32 bits, the thread word (as entry_thread's) above them, the size's
     * low live_slot_size_low bits at the top. A record that does not fit
     * (its size or address too large) is one of its shard's side records:
     * the pointer at live_side_offset in the shard (0: none) is a mapping
     * whose records, whole (entry_size bytes, the entry_* offsets), start
     * live_side_entries_offset bytes in, the first N in use, N the 64-bit
     * word at live_side_count_offset in the shard, in no order. The
     * shard's count (live_count_offset) counts its slots alone. */
    uint64_t live_slot_size, live_slot_ptr_bits, live_slot_size_low;
    uint64_t live_side_offset, live_side_count_offset, live_side_entries_offset;
};

/* Fills in memtrace_state. Called once from the tracer's initialisation,
 * after the freed history and the main thread's registration. */
void mt_descriptor_publish(void);

#endif
