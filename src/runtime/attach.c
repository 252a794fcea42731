/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace attach / detach (the launcher's, cli/memtrace.sh): the library
 * is loaded late, by dlopen from gdb, into a process that did not preload
 * it. Nothing calls its malloc then: the program's modules reach libc's
 * through their GOT entries. memtrace_attach rewrites the GOT entries
 * (JUMP_SLOT and GLOB_DAT relocations) of every loaded module for the
 * names interpose.c interposes, to this library's definitions, and again
 * after each dlopen for the modules it loads; memtrace_detach writes the
 * original values back, but for the functions that free (see stays).
 * What no GOT entry leads to stays invisible: libc
 * calling its allocator directly, ld.so's own allocations, a statically
 * linked allocator.
 *
 * Contract with the launcher: it sets _MEMTRACE_ATTACH=1 in the target
 * before the dlopen (the constructor then starts with recording off and
 * says nothing about malloc not being its own), calls memtrace_attach()
 * once the dlopen returned, and memtrace_detach() to detach. Both run in
 * one thread of the target while gdb lets the others run. */
#include "runtime/attach.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/output.h"
#include "capture/interpose.h"
#include "capture/state.h"
#include "runtime/plt_entry.h"
#include "runtime/recording.h"
#include "base/reentry.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if __ELF_NATIVE_CLASS == 64
#define RELOC_TYPE ELF64_R_TYPE
#define RELOC_SYM ELF64_R_SYM
#else
#define RELOC_TYPE ELF32_R_TYPE
#define RELOC_SYM ELF32_R_SYM
#endif
#if defined(__x86_64__)
#define RELOC_JUMP_SLOT R_X86_64_JUMP_SLOT
#define RELOC_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define RELOC_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define RELOC_GLOB_DAT R_AARCH64_GLOB_DAT
#else /* no port yet: nothing is redirected, attach changes nothing */
#define RELOC_JUMP_SLOT 0xffffffffu
#define RELOC_GLOB_DAT 0xffffffffu
#endif

/* The names redirected: capture/interposed.def's but the exec family
 * (children of an attached process are not traced: ours[i] stays NULL),
 * then dlopen, which is this file's. classes[i] is names[i]'s MT_IP_*. */
#define MT_INTERPOSE(cls, next, ret, name, params, body) #name,
static const char *const names[] = {
#include "capture/interposed.def"
    "dlopen"
};
#undef MT_INTERPOSE
#define MT_INTERPOSE(cls, next, ret, name, params, body) MT_IP_##cls,
static const unsigned char classes[] = {
#include "capture/interposed.def"
    MT_IP_OTHER
};
#undef MT_INTERPOSE
#define N_NAMES (sizeof names / sizeof names[0])
#define DLOPEN (N_NAMES - 1)
_Static_assert(N_NAMES <= 256, "patched_entry.name is one byte");

/* ours[i]: this library's definition of names[i], looked up once. */
static void *ours[N_NAMES];
static uintptr_t our_base;
static void *(*real_dlopen)(const char *, int);

/* The GOT entries rewritten, with what they held: detach writes that back.
 * One mapping, grown never: a process with more entries than this keeps
 * the rest on libc's functions (said once). Guarded by `lock`. */
typedef struct {
    uintptr_t *slot;
    uintptr_t original;
    uintptr_t module;   /* the module's load address (dlpi_addr) */
    bool relro;         /* in the module's RELRO segment: read-only but around writes */
    unsigned char name; /* its index in names */
} patched_entry;
#define MAX_PATCHED 65536
static patched_entry *patched;
static size_t n_patched;
static bool attached, full_said;

/* The load addresses of this library's dependencies (libc, libdw, ...):
 * detach leaves their entries on memtrace's functions, which pass every
 * call through once recording is off. Memtrace's own work (symbolizing, a
 * report's FILE) allocates in them from its internal heap; such a block
 * freed later must still reach memtrace's free, never libc's. */
#define MAX_DEPS 64
static uintptr_t deps[MAX_DEPS];
static size_t n_deps;
static mt_lock lock = MT_LOCK_INIT;

int mt_attach_late_load(void)
{
    static int late = -1;
    if (late < 0)
        late = getenv("_MEMTRACE_ATTACH") != NULL;
    return late;
}

/* Writes VALUE to SLOT, making the page writable around the store when it
 * is in the module's RELRO segment (read-only after relocation with -z
 * relro). Other threads read the word as it was or as it is now. */
static bool write_slot(uintptr_t *slot, uintptr_t value, bool relro)
{
    uintptr_t a = (uintptr_t)slot;
    if (relro) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        void *p = (void *)(a & ~(page - 1));
        if (mprotect(p, page, PROT_READ | PROT_WRITE) != 0)
            return false;
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        mprotect(p, page, PROT_READ);
        return true;
    }
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return true;
}

static int name_index(const char *s)
{
    for (size_t i = 0; i < N_NAMES; i++)
        if (strcmp(s, names[i]) == 0)
            return (int)i;
    return -1;
}

/* Redirects (ATTACH) or restores the entries of one module's relocation
 * table RELS (SIZE bytes). */
static void patch_table(const ElfW(Rela) * rels, size_t size, const ElfW(Sym) * symtab,
                        const char *strtab, uintptr_t base, uintptr_t relro_lo, uintptr_t relro_hi)
{
    for (size_t k = 0; k < size / sizeof *rels; k++) {
        unsigned long type = RELOC_TYPE(rels[k].r_info);
        if (type != RELOC_JUMP_SLOT && type != RELOC_GLOB_DAT)
            continue;
        const ElfW(Sym) *sym = &symtab[RELOC_SYM(rels[k].r_info)];
        int i = name_index(strtab + sym->st_name);
        if (i < 0 || !ours[i])
            continue;
        uintptr_t *slot = (uintptr_t *)(base + rels[k].r_offset);
        uintptr_t was = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (was == (uintptr_t)ours[i])
            continue; /* patched already */
        if (n_patched == MAX_PATCHED) {
            if (!full_said)
                mt_warn("attach: more than %d GOT entries to redirect; the rest stay untraced",
                        MAX_PATCHED);
            full_said = true;
            return;
        }
        bool relro = (uintptr_t)slot >= relro_lo && (uintptr_t)slot < relro_hi;
        if (write_slot(slot, (uintptr_t)ours[i], relro))
            patched[n_patched++] = (patched_entry){ slot, was, base, relro, (unsigned char)i };
    }
}

static int patch_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    uintptr_t base = info->dlpi_addr;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (base == our_base || strstr(name, "linux-vdso") || strstr(name, "linux-gate"))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t relro_lo = 0, relro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(base + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO) {
            uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
            relro_lo = (base + ph->p_vaddr) & ~(page - 1);
            /* Rounded down, as ld.so protects it: the page the segment
             * ends in stays writable (lazy binding's .got.plt may start
             * there), and must not be made read-only here. */
            relro_hi = (base + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
        }
    }
    if (!dyn)
        return 0;
    mt_dyn_tables t;
    if (!mt_dyn_tables_read(dyn, base, &t))
        return 0;
    if (t.jmprel)
        patch_table(t.jmprel, t.jmprel_size, t.symtab, t.strtab, base, relro_lo, relro_hi);
    if (t.rela)
        patch_table(t.rela, t.rela_size, t.symtab, t.strtab, base, relro_lo, relro_hi);
    return 0;
}

/* Redirects the modules loaded since the last pass (entries already
 * redirected are skipped). Called with `lock` held. */
static void patch_all(void)
{
    int was = mt_enter();
    dl_iterate_phdr(patch_module, NULL);
    mt_leave(was);
}

/* dlopen, redirected: the modules it loads get their entries rewritten
 * before the program sees the handle. glibc resolves a bare name with the
 * RUNPATH of dlopen's caller, which is now this library: a module whose
 * plugins are found only through its own RUNPATH does not find them while
 * attached (heaptrack -p has the same limit). */
static void *attached_dlopen(const char *file, int mode)
{
    void *h = real_dlopen(file, mode);
    if (h && mt_lock_acquire_unless_mine(&lock)) {
        if (attached)
            patch_all();
        mt_lock_release(&lock);
    }
    return h;
}

static bool is_dep(uintptr_t base)
{
    for (size_t i = 0; i < n_deps; i++)
        if (deps[i] == base)
            return true;
    return false;
}

/* Adds the modules MAP needs (DT_NEEDED), and theirs, to deps. */
static void add_deps(const struct link_map *map)
{
    const ElfW(Dyn) *dyn = map->l_ld;
    const char *strtab = NULL;
    for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)mt_dyn_ptr(d->d_un.d_ptr, map->l_addr);
    if (!strtab)
        return;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag != DT_NEEDED || n_deps == MAX_DEPS)
            continue;
        void *h = dlopen(strtab + d->d_un.d_val, RTLD_LAZY | RTLD_NOLOAD);
        struct link_map *dep = NULL;
        if (h && dlinfo(h, RTLD_DI_LINKMAP, &dep) == 0 && dep && !is_dep(dep->l_addr)) {
            deps[n_deps++] = dep->l_addr;
            add_deps(dep);
        }
        if (h)
            dlclose(h);
    }
}

static bool look_up_ours(void)
{
    Dl_info self;
    if (!dladdr((void *)look_up_ours, &self) || !self.dli_fname)
        return false;
    our_base = (uintptr_t)self.dli_fbase;
    void *h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return false;
    for (size_t i = 0; i < DLOPEN; i++)
        ours[i] = classes[i] == MT_IP_EXEC ? NULL : dlsym(h, names[i]);
    struct link_map *self_map = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &self_map) == 0 && self_map)
        add_deps(self_map);
    dlclose(h);
    ours[DLOPEN] = (void *)attached_dlopen;
    real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    Dl_info where;
    /* Each must be this library's own, not one found further along. */
    for (size_t i = 0; i < DLOPEN; i++)
        if (ours[i] && (!dladdr(ours[i], &where) || (uintptr_t)where.dli_fbase != our_base))
            ours[i] = NULL;
    return ours[0] && real_dlopen;
}

MT_EXPORT int memtrace_attach(void)
{
    int was = mt_enter();
    int rc = MT_ATTACH_OK;
    if (!mt_lock_acquire_unless_mine(&lock)) {
        mt_leave(was);
        return MT_ATTACH_FAILED;
    }
    if (attached || !mt_attach_late_load()) {
        /* Attached, or loaded at start (preloaded, linked with -lmemtrace):
         * tracing already. */
        rc = MT_ATTACH_ALREADY;
        goto out;
    }
    int phase = mt_atomic_load_acquire(&mt_phase);
    if (phase != MT_READY && phase != MT_PAUSED && phase != MT_RESUMING) {
        rc = MT_ATTACH_NOT_STARTED;
        goto out;
    }
    if (!patched) {
        void *m = mmap(NULL, MAX_PATCHED * sizeof *patched, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED || !look_up_ours()) {
            if (m != MAP_FAILED)
                munmap(m, MAX_PATCHED * sizeof *patched);
            rc = MT_ATTACH_FAILED;
            goto out;
        }
        patched = m;
    }
    /* The entries first, then recording: recording must never be on
     * while a module's malloc still reaches the real one directly. Such a
     * block (untraced, freed through memtrace's free, which a detach
     * leaves redirected) may be at an address freed while recording, and
     * would be taken for a double free; blocks from before the turn-on
     * are below its mark (distrust_history), whatever entry made them. */
    mt_recording_words *w = &mt_recording_state;
    mt_atomic_store_seq_cst(&w->ever_off, (mt_atomic_load_relaxed(&w->ever_off) | MT_REC_ATTACHED) &
                                              ~(uint64_t)MT_REC_DETACHED);
    attached = true;
    patch_all();
    if (mt_cfg.start)
        mt_set_recording(true);
out:
    mt_lock_release(&lock);
    mt_leave(was);
    return rc;
}

/* Whether detach leaves entry E on memtrace's function: the entries of
 * memtrace's own dependencies (see deps), and everywhere the functions
 * that free or resize a block (MT_IP_FREE: free, realloc, the C++
 * deletes, sdallocx, ...). A block recorded while attached may be freed
 * after the detach; its record must leave then, or the block would still
 * be answered as live. With recording off they cost a table lookup
 * (malloc.c's forget finds no record for a block allocated since). */
static bool stays(const patched_entry *e)
{
    return is_dep(e->module) || classes[e->name] == MT_IP_FREE;
}

MT_EXPORT int memtrace_detach(void)
{
    int was = mt_enter();
    if (!mt_lock_acquire_unless_mine(&lock)) {
        mt_leave(was);
        return MT_ATTACH_FAILED;
    }
    int rc = MT_ATTACH_OK;
    if (!attached) {
        rc = MT_ATTACH_NOT_ATTACHED;
    } else {
        /* Off first, then the entries (as memtrace_attach, the other way
         * round): the allocation functions are the real ones again only
         * once nothing records; the frees that stay on ours (stays) find
         * the phase PAUSED and only take the records out (malloc.c's
         * forget: no stack captured, no freed history; a bad free is
         * reported only when the record says another family allocated
         * the block). */
        mt_set_recording(false);
        /* Newest first: an entry rewritten twice (unloaded, its address
         * reused by another module) gets its first value last. Only the
         * entries that still hold ours: a module unloaded and another
         * mapped there may hold anything. */
        for (size_t k = n_patched; k-- > 0;) {
            patched_entry *e = &patched[k];
            if (stays(e))
                continue;
            Dl_info where;
            if (!dladdr(e->slot, &where))
                continue; /* unloaded */
            uintptr_t now = __atomic_load_n(e->slot, __ATOMIC_ACQUIRE);
            bool ours_now = false;
            for (size_t i = 0; i < N_NAMES; i++)
                ours_now |= ours[i] && now == (uintptr_t)ours[i];
            if (!ours_now)
                continue;
            write_slot(e->slot, e->original, e->relro);
        }
        /* The entries that stay redirected stay listed. */
        size_t kept = 0;
        for (size_t k = 0; k < n_patched; k++)
            if (stays(&patched[k]))
                patched[kept++] = patched[k];
        n_patched = kept;
        attached = false;
        mt_recording_words *w = &mt_recording_state;
        mt_atomic_store_seq_cst(&w->ever_off,
                                mt_atomic_load_relaxed(&w->ever_off) | MT_REC_DETACHED);
    }
    mt_lock_release(&lock);
    mt_leave(was);
    return rc;
}
