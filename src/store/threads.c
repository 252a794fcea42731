/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Thread registry. Slot N - 1 belongs to thread number N and is written by
 * that thread at registration, and by pthread_setname_np and
 * prctl(PR_SET_NAME) for its name (a rename racing a reader can show a torn
 * name: acceptable for a label).
 * The registry is one anonymous mapping made on first use; it does not go
 * through mt_os_map, so a failure to map it (the names are then missing)
 * neither stops recording nor shifts MEMTRACE_FAULT_MAP's count. */
#include "store/threads.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/os.h"
#include "base/reentry.h"
#include "store/recording_words.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

MT_TLS uint32_t mt_thread_self;
MT_TLS mt_thread_info *mt_thread_slot;
mt_seq_state mt_seq;
/* The recording words (recording_words.h), beside the allocation numbers
 * their seq is one of: all zero until start-up stamps them
 * (mt_recording_init). */
mt_recording_words mt_recording_state;
/* How many threads have asked for a number, plus one: 64 bits, so that it
 * never comes back to 0 (mt_thread_wrap bounds the number itself). */
static mt_atomic(uint64_t) next_number = 1;

static mt_atomic(mt_thread_info *) registry;
static mt_atomic(int) map_failed;
static mt_atomic(uint32_t) highest;

/* Names given to threads before they registered (named by another thread
 * before their first allocation), keyed by pthread_t; taken at registration. */
#define PENDING 16
static struct {
    uint64_t self; /* 0 = free */
    char name[MT_THREAD_NAME];
} pending[PENDING];

static mt_thread_info *registry_map(void)
{
    mt_thread_info *r = mt_atomic_load_acquire(&registry);
    if (r || mt_atomic_load_relaxed(&map_failed))
        return r;
    void *p = mmap(NULL, MT_THREADS_MAX * sizeof *r, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        mt_atomic_store_relaxed(&map_failed, 1);
        return NULL;
    }
    mt_os_no_huge_pages(p, MT_THREADS_MAX * sizeof *r);
    mt_thread_info *expected = NULL;
    if (!mt_atomic_cas_acq_rel(&registry, &expected, p)) {
        munmap(p, MT_THREADS_MAX * sizeof *r);
        return expected;
    }
    return p;
}

static void set_name(char *dst, const char *src)
{
    size_t n = strnlen(src, MT_THREAD_NAME - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void threads_register(uint32_t number);

MT_COLD uint32_t mt_thread_number_new(void)
{
    uint32_t n = mt_thread_wrap(mt_atomic_add_relaxed(&next_number, 1));
    mt_thread_self = n;
    threads_register(n);
    return n;
}

void mt_threads_skip_to(uint64_t n)
{
    mt_atomic_store_relaxed(&next_number, n);
}

static void threads_register(uint32_t number)
{
    MT_ASSERT(number == mt_thread_self && number != 0);
    mt_thread_info *r = registry_map();
    if (!r || number == 0 || number > MT_THREADS_MAX)
        return;
    mt_thread_info *t = &r[number - 1];
    t->self = (uint64_t)pthread_self();
    char comm[16] = "";
    for (unsigned i = 0; i < PENDING; i++) {
        if (mt_atomic_load_acquire(&pending[i].self) != t->self)
            continue;
        /* A pthread_t is reused once its thread is joined: the pending name
         * is this thread's only if the kernel says so (the name it gave a
         * thread that exited without allocating is not). */
        /* The system call, not prctl: that name is memtrace's own
         * interposer, which may resolve the real one with dlsym, and this
         * runs inside a thread's first allocation. */
        if (!comm[0])
            syscall(SYS_prctl, PR_GET_NAME, comm, 0, 0, 0);
        if (strncmp(comm, pending[i].name, sizeof comm - 1) == 0)
            set_name(t->name, pending[i].name);
        mt_atomic_store_release(&pending[i].self, 0);
    }
    mt_atomic_store_release(&t->tid, (uint32_t)syscall(SYS_gettid));
    mt_thread_slot = t;
    uint32_t h = mt_atomic_load_relaxed(&highest);
    while (h < number && !mt_atomic_cas_weak_release(&highest, &h, number)) {
    }
}

const char *mt_threads_name(uint32_t number)
{
    const mt_thread_info *r = mt_atomic_load_acquire(&registry);
    if (!r || number == 0 || number > MT_THREADS_MAX || r[number - 1].name[0] == '\0')
        return NULL;
    return r[number - 1].name;
}

/* The registered thread whose pthread_t is SELF and that still runs (a
 * pthread_t is reused after a join, so the newest live match wins). */
static mt_thread_info *find_thread(uint64_t self)
{
    mt_thread_info *r = mt_atomic_load_acquire(&registry);
    if (!r)
        return NULL;
    pid_t pid = getpid();
    for (uint32_t n = mt_atomic_load_acquire(&highest); n > 0; n--) {
        mt_thread_info *t = &r[n - 1];
        uint32_t tid = mt_atomic_load_acquire(&t->tid);
        if (tid && t->self == self && syscall(SYS_tgkill, pid, tid, 0) == 0)
            return t;
    }
    return NULL;
}

int mt_pthread_setname(pthread_t thread, const char *name)
{
    static int (*real_setname)(pthread_t, const char *);
    int was = mt_enter();
    if (!real_setname)
        real_setname = (int (*)(pthread_t, const char *))dlsym(RTLD_NEXT, "pthread_setname_np");
    int rc = real_setname ? real_setname(thread, name) : ENOSYS;
    if (rc == 0 && name) {
        mt_thread_info *t = NULL;
        if (pthread_equal(thread, pthread_self())) {
            uint32_t n = mt_thread_number();
            mt_thread_info *r = registry_map();
            t = r && n <= MT_THREADS_MAX ? &r[n - 1] : NULL;
        } else {
            t = find_thread((uint64_t)thread);
        }
        if (t) {
            set_name(t->name, name);
        } else {
            for (unsigned i = 0; i < PENDING; i++) {
                uint64_t expected = 0;
                if (mt_atomic_load_relaxed(&pending[i].self) == (uint64_t)thread ||
                    mt_atomic_cas_acq_rel(&pending[i].self, &expected, (uint64_t)thread)) {
                    set_name(pending[i].name, name);
                    break;
                }
            }
        }
    }
    mt_leave(was);
    return rc;
}

int mt_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)
{
    static int (*real_prctl)(int, ...);
    int was = mt_enter();
    int saved = errno;
    if (!real_prctl)
        real_prctl = (int (*)(int, ...))dlsym(RTLD_NEXT, "prctl");
    errno = saved;
    int rc = real_prctl ? real_prctl(option, a2, a3, a4, a5)
                        : (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    saved = errno;
    if (rc == 0 && option == PR_SET_NAME && a2) {
        uint32_t n = mt_thread_number();
        mt_thread_info *r = registry_map();
        if (r && n <= MT_THREADS_MAX)
            set_name(r[n - 1].name, (const char *)a2);
    }
    mt_leave(was);
    errno = saved;
    return rc;
}

void mt_seq_new_epoch(void)
{
    /* Release: pairs with the acquire in malloc.c's batch refill, which
     * then adds to the shared counter after the caller read it. */
    mt_atomic_add_release(&mt_seq.epoch, 1);
}

/* Calls FN for every registered thread's slot, with CTX. */
static void each_slot(void (*fn)(const mt_thread_info *, void *), void *ctx)
{
    const mt_thread_info *r = mt_atomic_load_acquire(&registry);
    if (!r)
        return;
    for (uint32_t n = mt_atomic_load_acquire(&highest); n > 0; n--)
        fn(&r[n - 1], ctx);
}

static void max_handed(const mt_thread_info *t, void *ctx)
{
    uint64_t *max = ctx, next = mt_atomic_load_relaxed(&t->seq_next);
    if (next && next - 1 > *max)
        *max = next - 1;
}

uint64_t mt_threads_seq_highest(void)
{
    /* A thread past the registry's slots, or none mapped: numbers taken
     * one at a time, not seen here. */
    if (mt_atomic_load_relaxed(&next_number) > MT_THREADS_MAX + 1 ||
        mt_atomic_load_relaxed(&map_failed))
        return UINT64_MAX;
    uint64_t max = 0;
    each_slot(max_handed, &max);
    return max;
}

const uint64_t *mt_seq_discarded(void)
{
    return (const uint64_t *)&mt_seq.discarded;
}

const mt_thread_info *mt_threads_registry(void)
{
    return registry_map();
}

const uint32_t *mt_threads_highest(void)
{
    return (const uint32_t *)&highest; /* an address for readers outside */
}

/* 0 = free; a slot is claimed by a CAS from 0 and freed by its owner. */
static mt_atomic(int) own_tids[MT_OWN_THREADS];

bool mt_threads_own_add(int tid)
{
    for (unsigned i = 0; i < MT_OWN_THREADS; i++) {
        int expected = 0;
        if (mt_atomic_cas_acq_rel(&own_tids[i], &expected, tid))
            return true;
    }
    return false;
}

void mt_threads_own_remove(int tid)
{
    for (unsigned i = 0; i < MT_OWN_THREADS; i++) {
        int expected = tid;
        mt_atomic_cas_acq_rel(&own_tids[i], &expected, 0);
    }
}

bool mt_threads_is_own(int tid)
{
    for (unsigned i = 0; i < MT_OWN_THREADS; i++)
        if (tid != 0 && mt_atomic_load_acquire(&own_tids[i]) == tid)
            return true;
    return false;
}
