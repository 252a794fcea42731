/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unloaded-module notes: a small ring in memtrace's own mapping, written at
 * dlclose (rare) under a lock, read by the symbolizer. */
#include "store/modules.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/reentry.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#define CAPACITY 256

static mt_lock lock = MT_LOCK_INIT;
static mt_unloaded_module *ring;
static unsigned long noted;
/* Completed dlcloses: mt_modules_generation. Bumped with release after the
 * real dlclose and read with acquire by the symbolizer, which then re-reads
 * the modules: it sees the library gone. */
static mt_atomic(unsigned long) unloads;
/* dlcloses begun: bumped with release before the real dlclose. */
mt_atomic(unsigned long) mt_modules_unloads_begun_count;

struct range_query {
    uintptr_t bias;
    uintptr_t lo, hi;
};

static int find_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct range_query *q = data;
    if (info->dlpi_addr != q->bias)
        return 0;
    q->lo = UINTPTR_MAX;
    q->hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = q->bias + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (lo < q->lo)
            q->lo = lo;
        if (hi > q->hi)
            q->hi = hi;
    }
    return 1;
}

static void note_dlclose(void *handle)
{
    struct link_map *lm = NULL;
    if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name ||
        !lm->l_name[0])
        return;
    /* l_name is the name given to dlopen, relative to whatever the working
     * directory was then; the loader's origin is the absolute directory. A
     * path that does not fit is not noted: no name beats a wrong file. */
    char path[sizeof ring->path];
    int n;
    if (lm->l_name[0] == '/') {
        n = snprintf(path, sizeof path, "%s", lm->l_name);
    } else {
        char origin[PATH_MAX];
        const char *base = strrchr(lm->l_name, '/');
        if (dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0)
            return;
        n = snprintf(path, sizeof path, "%s/%s", origin, base ? base + 1 : lm->l_name);
    }
    if (n < 0 || (size_t)n >= sizeof path)
        return;
    struct range_query q = { .bias = lm->l_addr };
    if (!dl_iterate_phdr(find_range, &q) || q.lo >= q.hi)
        return;
    mt_lock_acquire(&lock);
    if (!ring)
        ring = mt_os_map(CAPACITY * sizeof *ring, "unloaded-module notes");
    if (ring) {
        mt_unloaded_module *m = &ring[noted % CAPACITY];
        m->lo = q.lo;
        m->hi = q.hi;
        m->bias = q.bias;
        memcpy(m->path, path, sizeof m->path);
        noted++;
    }
    mt_lock_release(&lock);
}

static void note_unloaded(void)
{
    mt_atomic_add_release(&unloads, 1);
}

unsigned long mt_modules_generation(void)
{
    return mt_atomic_load_acquire(&unloads);
}

void mt_modules_child_forget_unloads_in_progress(void)
{
    mt_atomic_store_release(&unloads, mt_atomic_load_relaxed(&mt_modules_unloads_begun_count));
}

bool mt_modules_find_unloaded(uintptr_t addr, mt_unloaded_module *out)
{
    bool found = false;
    if (!mt_lock_try_for(&lock, 200000))
        return false;
    unsigned long end = noted, begin = end > CAPACITY ? end - CAPACITY : 0;
    for (unsigned long i = end; i-- > begin && ring;) {
        const mt_unloaded_module *m = &ring[i % CAPACITY];
        if (addr >= m->lo && addr < m->hi) {
            *out = *m;
            found = true;
            break;
        }
    }
    mt_lock_release(&lock);
    return found;
}

bool mt_modules_lock(void)
{
    return mt_lock_acquire_unless_mine(&lock);
}

void mt_modules_unlock(void)
{
    mt_lock_release(&lock);
}

int mt_dlclose(void *handle)
{
    static int (*real_dlclose)(void *);
    if (!real_dlclose)
        real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    if (!real_dlclose)
        return -1;
    int was = mt_enter();
    note_dlclose(handle);
    mt_leave(was);
    mt_atomic_add_release(&mt_modules_unloads_begun_count, 1);
    int rc = real_dlclose(handle);
    note_unloaded();
    return rc;
}
