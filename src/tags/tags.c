/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tag scopes' nodes and the calls that move a thread between them (see
 * tags.h for the invariants). No lock anywhere: the node array is mapped
 * once and published with a compare-and-swap, ids come from one counter
 * (taken once per node made, never per allocation), and a thread links
 * only nodes of its own tree. */
#include "tags/tags.h"

#include "base/os.h"
#include "base/output.h"
#include "store/threads.h"

#include <string.h>
#include <sys/mman.h>

MT_TLS uint32_t mt_tag_cache[MT_TAG_CACHE_SLOTS];
mt_atomic(int) mt_tags_used;
mt_tag_node *mt_tag_nodes;
static mt_atomic(mt_tag_node *) nodes_word; /* mt_tag_nodes, as published */
static mt_atomic(uint32_t) next_id = 1;     /* ids handed out, plus one */

#define TABLE_BYTES ((size_t)MT_TAG_MAX * sizeof(mt_tag_node))

/* Maps the node array once (a thread that loses the race unmaps its own)
 * and puts tags in use. */
static bool table_ready(void)
{
    /* Acquire: pairs with the release below; mt_tag_nodes is set. (Not
     * nodes_word: it is published before mt_tag_nodes is.) */
    if (mt_atomic_load_acquire(&mt_tags_used))
        return true;
    mt_tag_node *p = mt_os_map(TABLE_BYTES, "tag scopes");
    if (!p)
        return false;
    mt_tag_node *expected = NULL;
    if (!mt_atomic_cas_acq_rel(&nodes_word, &expected, p)) {
        munmap(p, TABLE_BYTES);
        p = expected;
    }
    mt_tag_nodes = p; /* a loser of the race writes the same value */
    /* Release: pairs with the acquire in mt_tag_thread_root; a thread that
     * sees tags in use sees the array. */
    mt_atomic_store_release(&mt_tags_used, 1);
    return true;
}

bool mt_tags_start(void)
{
    return table_ready();
}

/* A new node of this thread's tree under PARENT (0: its root), or 0 when
 * the table is full (said once). */
static uint32_t new_node(uint32_t parent, const char *name, size_t len)
{
    static mt_atomic(int) said;
    uint32_t id = mt_atomic_load_relaxed(&next_id);
    do {
        if (id >= MT_TAG_MAX) {
            if (!mt_atomic_exchange_relaxed(&said, 1))
                mt_warn("tag scopes: the table is full (%u nodes); allocations count in the "
                        "scope entered last",
                        MT_TAG_MAX - 1);
            return 0;
        }
    } while (!mt_atomic_cas_weak_relaxed(&next_id, &id, id + 1));
    mt_tag_node *n = &mt_tag_nodes[id];
    memcpy(n->name, name, len);
    n->name[len] = '\0';
    n->name_mask = mt_tag_name_mask(len);
    n->parent = parent;
    n->thread = mt_thread_number();
    n->depth = parent ? mt_tag_nodes[parent].depth + 1 : 0;
    uint32_t root = parent ? mt_tag_nodes[parent].root : id;
    /* Release: a reader that sees the root (tools read nodes below the
     * count and skip those whose root is 0) sees the rest. */
    mt_atomic_store_release((mt_atomic(uint32_t) *)&n->root, root);
    if (parent) {
        mt_tag_node *p = &mt_tag_nodes[parent];
        mt_atomic_store_relaxed(&n->next_sibling, mt_atomic_load_relaxed(&p->first_child));
        /* Release: pairs with the reader's acquire of the link. */
        mt_atomic_store_release(&p->first_child, id);
    }
    return id;
}

MT_COLD uint32_t mt_tag_thread_root(void)
{
    if (mt_tag_root)
        return mt_tag_root;
    /* Acquire: pairs with table_ready's release; mt_tag_nodes is set. */
    if (!mt_atomic_load_acquire(&mt_tags_used))
        return 0;
    uint32_t id = new_node(0, "", 0);
    if (id) {
        mt_tag_root = id;
        mt_tag_cur = id;
    }
    return id;
}

/* The cache is tried first; a miss looks the scope up among the current
 * node's children before the name is checked: a name found there was
 * checked when it was made. */
const char *mt_tag_push(const char *name)
{
    if (mt_tag_push_known(name))
        return NULL;
    if (name == NULL)
        return "memtrace_tag_push(NULL): a scope needs a name; nothing changed";
    uint32_t cur = mt_tag_cur;
    if (MT_UNLIKELY(cur == 0)) {
        if (!table_ready())
            return "memtrace_tag_push: no memory for the tag scopes; nothing changed";
        if ((cur = mt_tag_thread_root()) == 0)
            return "memtrace_tag_push: the tag table is full; nothing changed";
    }
    const mt_tag_node *c = &mt_tag_nodes[cur];
    if (c->depth >= MT_TAG_DEPTH_MAX)
        return "memtrace_tag_push: scopes nested more than 64 deep; nothing changed";
    uint32_t id = mt_atomic_load_relaxed(&c->first_child);
    while (id && !mt_tag_named(&mt_tag_nodes[id], name))
        id = mt_atomic_load_relaxed(&mt_tag_nodes[id].next_sibling);
    if (id == 0) {
        size_t len = strnlen(name, MT_TAG_NAME_MAX + 1);
        if (len == 0)
            return "memtrace_tag_push(\"\"): a scope needs a name; nothing changed";
        if (len > MT_TAG_NAME_MAX)
            return "memtrace_tag_push: name longer than 47 bytes; nothing changed";
        if ((id = new_node(cur, name, len)) == 0)
            return "memtrace_tag_push: the tag table is full; nothing changed";
    }
    mt_tag_cache[mt_tag_slot(cur, name)] = id;
    mt_tag_cur = id;
    return NULL;
}

const mt_tag_node *mt_tag_table(uint32_t *count)
{
    const mt_tag_node *t = mt_atomic_load_acquire(&nodes_word);
    uint32_t n = mt_atomic_load_acquire(&next_id);
    *count = t ? (n < MT_TAG_MAX ? n : MT_TAG_MAX) : 0;
    return t;
}

const void *mt_tag_nodes_word(void)
{
    return &nodes_word;
}

const void *mt_tag_count_word(void)
{
    return &next_id;
}
