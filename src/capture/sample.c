/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sampled tracing's slow path (sample.h): the draws, start-up. */
#include "capture/sample.h"

#include "base/atomic.h"
#include "base/os.h"
#include "store/live_bytes.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

uint64_t mt_sample_key;
bool mt_sample_glibc;
uint8_t *mt_shadow_dir[MT_SHADOW_REGIONS];
mt_atomic(size_t) mt_shadow_limit;

#define SHADOW_REGION_BYTES ((size_t)1 << (MT_SHADOW_REGION_BITS - MT_SHADOW_SHIFT))

uint8_t *mt_shadow_make(uintptr_t a)
{
    uint8_t *s = mt_shadow_at(a);
    if (s != NULL || (a >> MT_SHADOW_REGION_BITS) >= MT_SHADOW_REGIONS)
        return s;
    /* Untouched pages cost nothing; a mapping is never given back (a
     * block's free may read it at any time after). */
    void *m = mmap(NULL, SHADOW_REGION_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#ifdef MADV_DONTDUMP
    madvise(m, SHADOW_REGION_BYTES, MADV_DONTDUMP); /* 128 MiB of zeros in a core */
#endif
    mt_os_no_huge_pages(m, SHADOW_REGION_BYTES); /* 1/32 of the heap's pages touched */
    uint8_t *expected = NULL;
    if (!__atomic_compare_exchange_n(&mt_shadow_dir[a >> MT_SHADOW_REGION_BITS], &expected,
                                     (uint8_t *)m, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
        munmap(m, SHADOW_REGION_BYTES); /* another thread's came first */
    return mt_shadow_at(a);
}

bool mt_shadow_put(void *p, size_t size, unsigned kind)
{
    uintptr_t a = (uintptr_t)p;
    size_t h = ((const size_t *)p)[-1], sz = h & ~(size_t)7;
    size_t slack = sz - 8 - size;
    if ((h & MT_GLIBC_MMAPPED) || slack > MT_SHADOW_SLACK_MAX) /* room for a trailer? */
        return mt_trailer_try(p, mt_sample_usable(p), size, kind);
    uint8_t *s = mt_shadow_make(a);
    if (s == NULL)
        return false;
    mt_live_alloc(size);
    __atomic_store_n(s, mt_shadow_mark(a, sz, slack), __ATOMIC_RELAXED);
    return true;
}

/* Whether FN is defined by glibc's libc.so.6. */
static bool in_libc(void *fn)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, "/libc.so.");
}

static uint64_t seed;
/* Threads in the order of their first draw: thread N's generator starts
 * from the seed and N, so that a seeded single-threaded run samples the
 * same blocks each time. */
static mt_atomic(uint64_t) threads_drawn;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void mt_shadow_tags(void)
{
    if (mt_atomic_load_acquire(&mt_tags_used))
        mt_atomic_store_relaxed(&mt_shadow_limit, 0);
}

void mt_sample_start(void)
{
    mt_sample_rate = mt_cfg.sample;
    mt_real_glibc = in_libc((void *)mt_real.next_malloc) && in_libc((void *)mt_real.next_free);
    mt_sample_glibc = mt_cfg.sample && mt_real_glibc &&
                      in_libc((void *)mt_real.next_malloc_usable_size);
    mt_atomic_store_relaxed(&mt_shadow_limit, mt_sample_glibc ? MT_SHADOW_SIZE_MAX : 0);
    mt_shadow_tags(); /* a push before start-up put them in use */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 40 ^
                 (uintptr_t)&x;
    mt_sample_key = splitmix(&x);
    seed = mt_cfg.sample_seed ? mt_cfg.sample_seed : splitmix(&x);
}

/* An interval: exponential, of mean mt_sample_rate bytes, at least 1. */
static int64_t next_interval(mt_sample_thread *me)
{
    uint64_t r = me->rng; /* xorshift64* */
    r ^= r >> 12;
    r ^= r << 25;
    r ^= r >> 27;
    me->rng = r;
    /* 53 random bits, as U in (0, 1] */
    double u = (double)(((r * 0x2545F4914F6CDD1Dull) >> 11) + 1) / 9007199254740992.0;
    double bytes = mt_neg_log(u) * (double)mt_sample_rate;
    return bytes < 1 ? 1 : bytes > 9e18 ? INT64_MAX : (int64_t)bytes;
}

bool mt_sample_draw(size_t size)
{
    mt_sample_thread *me = &mt_sample_me;
    if (MT_UNLIKELY(me->rng == 0)) {
        uint64_t x = seed ^ (mt_atomic_add_relaxed(&threads_drawn, 1) * 0xD1B54A32D192ED03ull);
        do
            me->rng = splitmix(&x);
        while (me->rng == 0);
        mt_live_thread_start();
        me->left = next_interval(me);
        int64_t left = me->left - (int64_t)size;
        if (left > 0) {
            me->left = left;
            return false;
        }
    }
    me->left = next_interval(me);
    return true;
}

void mt_sample_sampled(void *p, size_t size)
{
    if (mt_guard_owns(p))
        return;
    mt_shadow_forget(p);
    size_t u = mt_sample_usable(p);
    if (u >= size + MT_TRAILER)
        mt_trailer_clear(p, u);
}

void mt_sample_remark(void *p, const mt_sample_block *b)
{
    if (b->shadow)
        __atomic_store_n(b->shadow, b->mark, __ATOMIC_RELAXED);
    else
        mt_trailer_write(p, b->usable, b->size, b->id, b->kind);
}
