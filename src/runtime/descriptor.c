/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace_state, the descriptor a debugger reads (see descriptor.h). Filled in
 * once at start-up; everything it points at stays at the same address for
 * the life of the process (shard array, chunk table, ring, registry). */
#include "runtime/descriptor.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/config.h"
#include "capture/capture.h"
#include "capture/guard.h"
#include "capture/entry_points.h"
#include "capture/quarantine.h"
#include "leak/leak_client.h"
#include "report/heap_error.h"
#include "runtime/recording.h"
#include "store/freed_history.h"
#include "store/live_bytes.h"
#include "store/live_table.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "tags/tags.h"

#include <stddef.h>
#include <string.h>

MT_EXPORT struct memtrace_state memtrace_state;

/* The snapshots' marks (descriptor.h): written by gdb alone. In memtrace's
 * own module, which is no root of the leak check. */
static struct snapshot {
    uint64_t mark;
    char name[40];
} snapshots[64];

static const char version[] = MEMTRACE_VERSION;

/* The live table: its shards, their layout and an entry's, the exact totals. */
static void publish_live(struct memtrace_state *s)
{
    mt_live_layout live;
    mt_live_describe(&live);
    s->live_shards = (uintptr_t)live.shards;
    s->live_shard_count = MT_LIVE_SHARDS;
    s->live_shard_bits = MT_LIVE_SHARD_BITS;
    s->live_shard_size = live.shard_size;
    s->live_lock_offset = live.lock_offset;
    s->live_count_offset = live.count_offset;
    s->live_slots_offset = live.slots_offset;
    s->live_log2cap_offset = live.cap_offset;
    s->live_entries_offset = live.entries_offset;
    s->live_hash_shift = MT_LIVE_HASH_SHIFT;
    s->live_hash_multiplier = MT_LIVE_HASH_MULTIPLIER;
    s->live_region_shift = MT_LIVE_REGION_SHIFT;
    s->live_group_bits = MT_LIVE_GROUP_BITS;
    s->live_exact = (uintptr_t)mt_live_total_word();
    s->live_exact_peak = (uintptr_t)mt_live_peak_word();
    s->live_exact_slack = MT_LIVE_FLUSH;
    s->entry_size = sizeof(mt_live_entry);
    s->entry_ptr = offsetof(mt_live_entry, ptr);
    s->entry_size_field = offsetof(mt_live_entry, size);
    s->entry_seq = offsetof(mt_live_entry, seq_word);
    s->entry_stack = offsetof(mt_live_entry, stack);
    s->entry_thread = offsetof(mt_live_entry, thread);
    s->entry_thread_bits = MT_ENTRY_THREAD_BITS;
    s->entry_seq_bits = MT_ENTRY_SEQ_BITS;
    s->live_cap_offset = live.cap_offset;
    s->live_slot_size = MT_LIVE_SLOT_SIZE;
    s->live_slot_ptr_bits = MT_LIVE_SLOT_PTR_BITS;
    s->live_slot_size_low = MT_LIVE_SLOT_SIZE_LOW;
    s->live_side_offset = live.side_offset;
    s->live_side_count_offset = live.side_count_offset;
    s->live_side_entries_offset = live.side_entries_offset;
}

/* The stack store's chunks. */
static void publish_stacks(struct memtrace_state *s)
{
    mt_stack_layout stacks;
    mt_stack_describe(&stacks);
    s->stack_chunks = (uintptr_t)stacks.chunks;
    s->stack_max_chunks = stacks.max_chunks;
    s->stack_chunk_bits = stacks.chunk_bits;
    s->stack_frames_offset = stacks.frames_offset;
    s->stack_depth_mask = stacks.depth_mask;
    s->stack_present_bit = stacks.present_bit;
    s->stack_count = (uintptr_t)stacks.count;
}

/* The freed history's ring and a record's layout. */
static void publish_freed(struct memtrace_state *s)
{
    size_t freed_cap;
    uint64_t pushed;
    const mt_freed_record *ring = mt_freed_ring(&freed_cap, &pushed);
    s->freed_ring = (uintptr_t)ring;
    s->freed_capacity = ring ? freed_cap : 0;
    s->freed_record_size = sizeof(mt_freed_record);
    s->freed_stamp = offsetof(mt_freed_record, stamp);
    s->freed_ptr = offsetof(mt_freed_record, ptr);
    s->freed_size = offsetof(mt_freed_record, size);
    s->freed_alloc_seq = offsetof(mt_freed_record, alloc_seq);
    s->freed_free_seq = offsetof(mt_freed_record, free_seq);
    s->freed_alloc_stack = offsetof(mt_freed_record, alloc_stack);
    s->freed_free_stack = offsetof(mt_freed_record, free_stack);
    s->freed_alloc_thread = offsetof(mt_freed_record, alloc_thread);
    s->freed_free_thread = offsetof(mt_freed_record, free_thread);
    s->freed_pushed = 0; /* see freed_blocks */
    s->freed_blocks = (uintptr_t)mt_freed_pushed();
    s->freed_block = mt_freed_block_size();
    s->freed_when = offsetof(mt_freed_record, when);
}

/* The thread registry and the allocation numbers. */
static void publish_threads(struct memtrace_state *s)
{
    s->threads = (uintptr_t)mt_threads_registry();
    s->threads_max = MT_THREADS_MAX;
    s->threads_entry_size = sizeof(mt_thread_info);
    s->threads_tid = offsetof(mt_thread_info, tid);
    s->threads_name = offsetof(mt_thread_info, name);
    s->threads_name_size = MT_THREAD_NAME;
    s->threads_highest = (uintptr_t)mt_threads_highest();
    s->seq_counter = (uintptr_t)mt_seq_counter();
    s->seq_discarded = (uintptr_t)mt_seq_discarded();
    s->seq_batch = MT_SEQ_BATCH;
    s->threads_seq_next = offsetof(mt_thread_info, seq_next);
    s->threads_seq_end = offsetof(mt_thread_info, seq_end);
    s->seq_epoch = (uintptr_t)&mt_seq.epoch;
}

/* The heap checks: the fill bytes, the quarantine, the error records and
 * the guard pool. */
static void publish_heap_check(struct memtrace_state *s)
{
    s->redzone_size = mt_cfg.redzone;
    s->redzone_byte = MT_REDZONE_BYTE;
    s->freed_byte = MT_FREED_BYTE;
    s->quarantine_rings = (uintptr_t)mt_quarantine_rings();
    s->quarantine_ring_next = offsetof(mt_quarantine_ring, next);
    s->quarantine_ring_owner = offsetof(mt_quarantine_ring, owner);
    s->quarantine_ring_busy = offsetof(mt_quarantine_ring, busy);
    s->quarantine_ring_cap = offsetof(mt_quarantine_ring, cap);
    s->quarantine_ring_head = offsetof(mt_quarantine_ring, head);
    s->quarantine_ring_tail = offsetof(mt_quarantine_ring, tail);
    s->quarantine_ring_slots = offsetof(mt_quarantine_ring, slots);
    s->quarantine_slot_size = sizeof(mt_quarantine_held);
    s->quarantine_slot_ptr = offsetof(mt_quarantine_held, ptr);
    s->quarantine_slot_size_field = offsetof(mt_quarantine_held, size);
    s->quarantine_slot_alloc_seq = offsetof(mt_quarantine_held, alloc_seq);
    s->quarantine_slot_free_seq = offsetof(mt_quarantine_held, free_seq);
    s->quarantine_slot_alloc_stack = offsetof(mt_quarantine_held, alloc_stack);
    s->quarantine_slot_free_stack = offsetof(mt_quarantine_held, free_stack);
    s->quarantine_slot_alloc_thread = offsetof(mt_quarantine_held, alloc_thread);
    s->quarantine_slot_free_thread = offsetof(mt_quarantine_held, free_thread);
    s->quarantine_slot_filled = offsetof(mt_quarantine_held, filled);
    s->heap_errors = (uintptr_t)mt_heap_errors_counter();
    s->error_records = (uintptr_t)mt_error_records();
    s->error_records_max = MT_ERROR_RECORDS;
    s->error_record_size = sizeof(mt_error_record);
    s->error_record_count = (uintptr_t)mt_error_records_count();
    mt_leak_client_layout client;
    mt_leak_client_describe(&client);
    s->client_ignored = client.ignored;
    s->client_ignored_max = client.ignored_max;
    s->client_ignored_count = client.ignored_count;
    s->client_roots = client.roots;
    s->client_roots_max = client.roots_max;
    s->client_roots_count = client.roots_count;
    s->guard_pool = (uintptr_t)&mt_guard_lo;
    s->guard_pool_size = (uintptr_t)&mt_guard_len;
}

/* The tag scopes' nodes. */
static void publish_tags(struct memtrace_state *s)
{
    s->tag_nodes = (uintptr_t)mt_tag_nodes_word();
    s->tag_count = (uintptr_t)mt_tag_count_word();
    s->tag_max = MT_TAG_MAX;
    s->tag_node_size = sizeof(mt_tag_node);
    s->tag_name_size = MT_TAG_NAME_MAX + 1;
    s->tag_allocs = offsetof(mt_tag_node, allocs);
    s->tag_alloc_bytes = offsetof(mt_tag_node, alloc_bytes);
    s->tag_frees = offsetof(mt_tag_node, frees);
    s->tag_free_bytes = offsetof(mt_tag_node, free_bytes);
    s->tag_remote_frees = offsetof(mt_tag_node, remote_frees);
    s->tag_remote_free_bytes = offsetof(mt_tag_node, remote_free_bytes);
    s->tag_parent = offsetof(mt_tag_node, parent);
    s->tag_root = offsetof(mt_tag_node, root);
    s->tag_thread = offsetof(mt_tag_node, thread);
    s->tag_name = offsetof(mt_tag_node, name);
}

/* The snapshots' marks. */
static void publish_snapshots(struct memtrace_state *s)
{
    s->snapshots = (uintptr_t)snapshots;
    s->snapshot_count = sizeof snapshots / sizeof *snapshots;
    s->snapshot_size = sizeof *snapshots;
    s->snapshot_name = offsetof(struct snapshot, name);
    s->snapshot_name_size = sizeof snapshots->name;
}

void mt_descriptor_publish(void)
{
    struct memtrace_state *s = &memtrace_state;
    s->version = MT_STATE_VERSION;
    s->size = sizeof *s;
    publish_live(s);
    publish_stacks(s);
    publish_freed(s);
    publish_threads(s);
    publish_heap_check(s);
    publish_tags(s);
    publish_snapshots(s);
    s->unwind_fallbacks = (uintptr_t)mt_unwind_fallback_counter();
    s->version_string = (uintptr_t)version;
    s->recording = (uintptr_t)&mt_recording_state;
    s->contended = (uintptr_t)&mt_contended;
    s->sample_rate = mt_cfg.sample;

    /* The magic last: a reader that sees it (a debugger attached while the
     * process runs) sees every word before it. */
    mt_atomic_fence_release();
    memcpy(s->magic, MT_STATE_MAGIC, sizeof s->magic);
}
