/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tag scopes (src/tags/tags.c, tags_format.c): the hot path's two calls
 * count exactly in the current node, a free from another thread on the
 * node's remote counters, push and pop move along one thread's tree and
 * refuse what they must, and the formatter's totals and merged tree add
 * up. One process for the suite: the node table is process-wide. */
#include "base/hot.h"
#include "tags/tags.h"
#include "tags/tags_format.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

MT_TLS mt_hot_thread mt_hot; /* mt_busy (base/hot.h), defined by base/pausable.c in the library */

static mt_tag_view view_of(uint32_t id)
{
    uint32_t n;
    const mt_tag_node *t = mt_tag_table(&n);
    cr_assert(t && id < n);
    mt_tag_view v;
    mt_tag_view_of(&t[id], &v);
    return v;
}

static uint32_t freed_id;
static void *free_elsewhere(void *arg)
{
    mt_tag_free(freed_id, (size_t)(uintptr_t)arg);
    return NULL;
}

Test(tags, counts_and_remote_frees)
{
    cr_assert(mt_tags_start());
    cr_assert_null(mt_tag_push("a"));
    uint32_t a = mt_tag_alloc(100);
    cr_assert_neq(a, 0);
    cr_assert_eq(mt_tag_alloc(50), a);
    cr_assert_null(mt_tag_push("b"));
    uint32_t b = mt_tag_alloc(7);
    cr_assert(b > a, "a child's id is above its parent's");
    cr_assert_null(mt_tag_pop());
    cr_assert_null(mt_tag_push("b")); /* the same node again */
    cr_assert_eq(mt_tag_alloc(1), b);
    cr_assert_null(mt_tag_pop());
    cr_assert_null(mt_tag_pop());
    mt_tag_free(a, 100); /* the owner */
    freed_id = a;
    pthread_t t;
    pthread_create(&t, NULL, free_elsewhere, (void *)(uintptr_t)50);
    pthread_join(t, NULL);
    mt_tag_view va = view_of(a), vb = view_of(b);
    cr_assert_eq(va.allocs, 2);
    cr_assert_eq(va.alloc_bytes, 150);
    cr_assert_eq(va.frees, 2);
    cr_assert_eq(va.free_bytes, 150);
    cr_assert_eq(vb.allocs, 2);
    cr_assert_eq(vb.alloc_bytes, 8);
    cr_assert_str_eq(vb.name, "b");
    cr_assert_eq(vb.parent, a);
    uint32_t n;
    const mt_tag_node *nodes = mt_tag_table(&n);
    cr_assert_eq(nodes[a].remote_frees, 1, "the other thread's free is remote");
    cr_assert_eq(nodes[a].frees, 1);
    mt_tag_free(0, 10); /* counted nowhere */
}

Test(tags, refused_calls_change_nothing)
{
    cr_assert(mt_tags_start());
    uint32_t before = mt_tag_thread_root(); /* the thread's root: where it is */
    cr_assert_neq(before, 0);
    cr_assert_eq(mt_tag_cur, before);
    cr_assert_not_null(mt_tag_push(NULL));
    cr_assert_not_null(mt_tag_push(""));
    char name[64];
    memset(name, 'x', 48);
    name[48] = '\0';
    cr_assert_not_null(mt_tag_push(name));
    cr_assert_eq(mt_tag_cur, before);
    cr_assert_not_null(mt_tag_pop(), "nothing entered on this thread");
    unsigned deep = 0;
    while (deep < 100 && mt_tag_push("d") == NULL)
        deep++;
    cr_assert_eq(deep, MT_TAG_DEPTH_MAX);
    while (deep > 0 && mt_tag_pop() == NULL)
        deep--;
    cr_assert_eq(deep, 0);
    cr_assert_eq(mt_tag_cur, before);
}

/* The push cache (tags.h) is a hint, checked on every use: the same
 * address with other bytes, and the same name under more parents than the
 * cache has slots (so that some share one), each reach their own node;
 * and a scope entered again is found in the cache. */
Test(tags, push_cache_is_checked)
{
    cr_assert(mt_tags_start());
    uint32_t root = mt_tag_thread_root();
    char buf[8] = "ka";
    cr_assert_null(mt_tag_push(buf));
    uint32_t ka = mt_tag_cur;
    cr_assert_null(mt_tag_pop());
    cr_assert(mt_tag_push_known(buf), "entered again: a hit");
    cr_assert_eq(mt_tag_cur, ka);
    cr_assert_null(mt_tag_pop());
    buf[1] = 'b';
    cr_assert_not(mt_tag_push_known(buf), "the same address, other bytes: a miss");
    cr_assert_eq(mt_tag_cur, root);
    cr_assert_null(mt_tag_push(buf));
    cr_assert_neq(mt_tag_cur, ka);
    cr_assert_str_eq(view_of(mt_tag_cur).name, "kb");
    cr_assert_null(mt_tag_pop());

    enum { N = MT_TAG_CACHE_SLOTS + 1 };
    static uint32_t child[N];
    const char *c = "c";
    for (int round = 0; round < 2; round++)
        for (unsigned i = 0; i < N; i++) {
            snprintf(buf, sizeof buf, "q%u", i);
            cr_assert_null(mt_tag_push(buf));
            uint32_t parent = mt_tag_cur;
            cr_assert_null(mt_tag_push(c));
            if (round == 0)
                child[i] = mt_tag_cur;
            cr_assert_eq(mt_tag_cur, child[i], "q%u's c in round %d", i, round);
            cr_assert_eq(view_of(child[i]).parent, parent);
            cr_assert_null(mt_tag_pop());
            cr_assert_null(mt_tag_pop());
        }
    cr_assert_eq(mt_tag_cur, root);
}

/* The cache's check a word at a time (mt_tag_named_word) gives
 * mt_tag_named's answers: the bytes past the NUL do not count, a name
 * one byte longer or shorter at the same address misses, names of 7 and
 * 8 bytes and more are compared whole, and a name in the last bytes of a
 * page before an inaccessible one is read without a fault. */
Test(tags, push_cache_word_check)
{
    cr_assert(mt_tags_start());
    uint32_t root = mt_tag_thread_root();
    long page = sysconf(_SC_PAGESIZE);
    char *m =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(m, MAP_FAILED);
    cr_assert_eq(mprotect(m + page, (size_t)page, PROT_NONE), 0);
    static const char *const names[] = { "w", "wx", "wxyzabc", "wxyzabcd", "wxyzabcdefghijk" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = strlen(names[i]);
        /* at a page's end (the NUL its last byte), and 8 bytes before it */
        char *ats[] = { m + page - (long)len - 1, m + page - (long)len - 9 };
        for (int k = 0; k < 2; k++) {
            char *at = ats[k];
            memset(m, 'z', (size_t)page);
            memcpy(at, names[i], len + 1);
            cr_assert_null(mt_tag_push(at));
            uint32_t id = mt_tag_cur;
            cr_assert_null(mt_tag_pop());
            if (k == 1)
                at[len + 1] = 'q'; /* past the NUL: still the same name */
            cr_assert(mt_tag_push_known(at), "%s: a hit", names[i]);
            cr_assert_eq(mt_tag_cur, id);
            cr_assert_null(mt_tag_pop());
            at[len - 1] = '\0'; /* one byte shorter */
            cr_assert_not(mt_tag_push_known(at), "%s less a byte: a miss", names[i]);
            cr_assert_eq(mt_tag_cur, root);
            if (k == 1) {
                at[len - 1] = names[i][len - 1];
                at[len] = 'z'; /* one byte longer */
                cr_assert_not(mt_tag_push_known(at), "%s and a byte: a miss", names[i]);
                cr_assert_eq(mt_tag_cur, root);
            }
        }
    }
    munmap(m, 2 * (size_t)page);
}

struct text {
    char buf[8192];
    size_t len;
};

static void emit(void *ctx, const char *s, size_t len)
{
    struct text *t = ctx;
    cr_assert(t->len + len < sizeof t->buf);
    memcpy(t->buf + t->len, s, len);
    t->len += len;
    t->buf[t->len] = '\0';
}

Test(tags, formatter_totals_and_merge)
{
    /* Two threads' trees: 1 (root) > 3 "io" > 4 "read"; 2 (root) > 5 "io". */
    mt_tag_view v[6];
    memset(v, 0, sizeof v);
    v[1] = (mt_tag_view){ .allocs = 1, .alloc_bytes = 10, .root = 1, .thread = 1 };
    v[2] = (mt_tag_view){ .root = 2, .thread = 2 };
    v[3] = (mt_tag_view){ .allocs = 4,
                          .alloc_bytes = 200,
                          .frees = 2,
                          .free_bytes = 100,
                          .parent = 1,
                          .root = 1,
                          .thread = 1,
                          .name = "io" };
    v[4] = (mt_tag_view){ .allocs = 1,
                          .alloc_bytes = 7,
                          .parent = 3,
                          .root = 1,
                          .thread = 1,
                          .name = "read" };
    v[5] = (mt_tag_view){ .allocs = 3,
                          .alloc_bytes = 180,
                          .frees = 1,
                          .free_bytes = 60,
                          .parent = 2,
                          .root = 2,
                          .thread = 2,
                          .name = "io" };
    static char scratch[1 << 16];
    cr_assert(mt_tag_scratch_bytes(6) <= sizeof scratch);
    struct text t = { .len = 0 };
    mt_tag_write(MT_TAG_TEXT, v, 6, scratch, emit, NULL, &t, 42);
    cr_assert(strstr(t.buf, "    io: 107 bytes in 3 blocks, 5 allocations, 2 frees; self 100 "
                            "bytes in 2 blocks, 4 allocations, 2 frees\n"),
              "%s", t.buf);
    cr_assert(strstr(t.buf, "all threads:\n  all: 237 bytes in 6 blocks, 9 allocations, 3 frees; "
                            "self 10 bytes in 1 blocks, 1 allocations, 0 frees\n"
                            "    io: 227 bytes in 5 blocks, 8 allocations, 3 frees; self 220 "
                            "bytes in 4 blocks, 7 allocations, 3 frees\n"),
              "%s", t.buf);
}
