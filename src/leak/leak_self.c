/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process itself as the leak check's target (leak_self.h). */
#define UNW_LOCAL_ONLY
#include "leak/leak_self.h"

#include "base/atomic.h"
#include "base/os.h"
#include "base/stop_world.h"
#include "scan/spans.h"
#include "capture/state.h"
#include "store/stack_store.h"
#include "store/threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* ------------------------------------------------------------ memory */

/* Work arrays come from mmap, not from the allocator being examined nor
 * mt_os_map (whose failure stops recording): a check that cannot get memory
 * says so and lets the program exit as it would have. */
void *mt_leak_map_bytes(size_t size)
{
    void *p =
        mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *mt_leak_vec_push(mt_leak_vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        char *p = mt_leak_map_bytes(cap * v->item);
        if (!p)
            return NULL;
        if (v->p) {
            memcpy(p, v->p, v->n * v->item);
            munmap(v->p, v->cap * v->item);
        }
        v->p = p;
        v->cap = cap;
    }
    return v->p + v->n++ * v->item;
}

void mt_leak_vec_free(mt_leak_vec *v)
{
    if (v->p)
        munmap(v->p, v->cap * v->item);
    *v = (mt_leak_vec){ .item = v->item };
}

/* ------------------------------------------------------------ the maps */

/* The process's mappings as the calling thread's maps list them
 * (ascending, mt_os_maps_open_self), read while the other threads are
 * stopped: what the reader may touch. A span's data is 1 when a file backs
 * it: a page past the file's end raises SIGBUS. */
static bool read_maps(mt_leak_vec *maps)
{
    int fd = mt_os_maps_open_self();
    if (fd < 0)
        return false;
    static char buf[4096 + 256]; /* only the exiting thread, threads stopped */
    mt_os_maps it;
    mt_os_maps_fd(&it, fd, buf, sizeof buf);
    mt_os_mapping m;
    while (mt_os_maps_next(&it, &m)) {
        mt_span *to = m.end > m.start ? mt_leak_vec_push(maps) : NULL;
        /* [vvar] pages may fault when read, and nothing there is a root. */
        bool vvar = m.path_len >= 5 && memcmp(m.path, "[vvar", 5) == 0;
        bool readable = m.perms[0] == 'r' && !vvar;
        if (to)
            *to = (mt_span){ m.start, m.end, readable ? m.end : m.start, m.inode != 0 };
    }
    close(fd);
    return maps->n > 0; /* none: not this process's maps (the code itself is mapped) */
}

/* The mapping holding ADDR, or NULL. */
static const mt_span *mapping_of(const mt_leak_vec *maps, uintptr_t addr)
{
    return mt_span_of((const mt_span *)maps->p, maps->n, addr);
}

/* ------------------------------------------------------------ the process as a source */

/* Where mt_leak_read_self copies memory of file-backed mappings;
 * memtrace's own data, which is no root. */
static char copy_buf[64 << 10];

/* mt_leak_read_fn for the process itself, once the maps say every byte is
 * mapped readable (adjacent mappings may share the range): anonymous
 * memory (the heap, stacks, .bss) is read in place; memory of a file (the
 * modules' .data) is copied with process_vm_readv, which fails where a
 * direct read would raise SIGBUS (a file truncated under its mapping). */
const void *mt_leak_read_self(void *ctx, uintptr_t addr, size_t len)
{
    const mt_leak_vec *maps = &((const mt_leak_self *)ctx)->maps;
    uintptr_t at = addr, end = addr + len;
    bool file = false;
    if (end < addr)
        return NULL;
    while (at < end) {
        const mt_span *m = mapping_of(maps, at);
        if (!m || at >= m->readable_hi)
            return NULL;
        file |= m->data != 0;
        at = m->readable_hi;
    }
    if (!file || len > sizeof copy_buf)
        return (const void *)addr;
    struct iovec local = { copy_buf, len }, remote = { (void *)addr, len };
    /* The calling thread's id: the process's id names main, whose memory
     * cannot be read once it has called pthread_exit. */
    ssize_t got =
        syscall(SYS_process_vm_readv, (pid_t)syscall(SYS_gettid), &local, 1UL, &remote, 1UL, 0UL);
    if (got == (ssize_t)len)
        return copy_buf;
    if (got < 0 && (errno == ENOSYS || errno == EPERM))
        return (const void *)addr; /* refused by a seccomp filter: read in place */
    return NULL;
}

/* mt_leak_region_fn for the process itself, from the maps read while the
 * other threads are stopped. */
int mt_leak_region_self(void *ctx, uintptr_t addr, uintptr_t *end)
{
    const mt_leak_vec *maps = &((const mt_leak_self *)ctx)->maps;
    return mt_span_region((const mt_span *)maps->p, maps->n, addr, end);
}

/* mt_leak_input.vtable for the process itself: ADDR lies in a mapping of
 * a file (a module's data), and the word there (a vtable's first slot: a
 * virtual function, or a pure virtual's stub) points into one too. */
bool mt_leak_vtable_self(void *ctx, uintptr_t addr)
{
    const mt_leak_vec *maps = &((const mt_leak_self *)ctx)->maps;
    const mt_span *m = mapping_of(maps, addr);
    if (!m || !m->data || addr + 8 > m->readable_hi)
        return false;
    const void *p = mt_leak_read_self(ctx, addr, 8);
    uintptr_t slot;
    if (!p)
        return false;
    memcpy(&slot, p, 8);
    const mt_span *f = mapping_of(maps, slot);
    return f && f->data && slot < f->readable_hi;
}

static bool mapping_self(void *ctx, uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    const mt_span *m = mapping_of(&((const mt_leak_self *)ctx)->maps, addr);
    if (m)
        *lo = m->lo, *hi = m->hi;
    return m != NULL;
}

/* Whether one of INFO's executable segments holds ADDR. */
static bool module_holds(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && addr >= lo && addr - lo < ph->p_memsz)
            return true;
    }
    return false;
}

struct modules_fn {
    void (*fn)(void *arg, const mt_leak_module *m);
    void *arg;
};

/* A module as dl_iterate_phdr has it: memtrace's own library is the one
 * holding this code, the allocator's the one holding the real malloc, the
 * dynamic linker the one at AT_BASE. */
static int module_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const struct modules_fn *f = arg;
    int kind = module_holds(info, (uintptr_t)module_of) ? MT_LEAK_MODULE_MEMTRACE
               : mt_real.next_malloc && module_holds(info, (uintptr_t)mt_real.next_malloc)
                   ? MT_LEAK_MODULE_ALLOCATOR
                   : MT_LEAK_MODULE_PROGRAM;
    mt_leak_module m = { info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, kind,
                         info->dlpi_addr == getauxval(AT_BASE) };
    f->fn(f->arg, &m);
    return 0;
}

static void modules_self(void *ctx, void (*fn)(void *arg, const mt_leak_module *m), void *arg)
{
    (void)ctx;
    struct modules_fn f = { fn, arg };
    dl_iterate_phdr(module_of, &f);
}

/* The thread pointer (pthread_self) memtrace's registry holds for kernel
 * thread TID, the newest registration first (a tid is reused after a
 * thread ends); 0 if it never allocated. For a thread that did not stop. */
static uintptr_t registered_tp(pid_t tid)
{
    const mt_thread_info *reg = mt_threads_registry();
    uint32_t n = reg ? mt_atomic_load_acquire(mt_threads_highest()) : 0;
    for (; n > 0 && n <= MT_THREADS_MAX; n--)
        if (reg[n - 1].tid == (uint32_t)tid)
            return (uintptr_t)reg[n - 1].self;
    return 0;
}

/* Thread I: a stopped one as its handler saw it; one that did not stop
 * from the stack pointer of the system call it waits in, if any, and the
 * thread pointer memtrace registered (noted for the report); the last,
 * the exiting thread, from OWN_SP. */
static bool thread_self(void *ctx, size_t i, mt_leak_thread *t)
{
    mt_leak_self *me = ctx;
    if (i == me->nworld) {
        /* No red zone: exit's caller called exit. */
        *t = (mt_leak_thread){ (uint32_t)syscall(SYS_gettid), me->own_sp, false,
                               (uintptr_t)pthread_self() };
        return true;
    }
    int state;
    const mt_world_thread *w = mt_world_thread_at(i, &state);
    if (state == MT_WORLD_STOPPED) {
        *t = (mt_leak_thread){ (uint32_t)w->tid, w->sp, true, w->tp };
        return true;
    }
    if (state != MT_WORLD_SENT)
        return false;
    uintptr_t sp = mt_world_syscall_sp(w->tid);
    mt_leak_unstopped *u = mt_leak_vec_push(me->un);
    if (u)
        *u = (mt_leak_unstopped){ w->tid, sp != 0 };
    *t = (mt_leak_thread){ (uint32_t)w->tid, sp, true, registered_tp(w->tid) };
    return true;
}

static bool reg_self(void *ctx, size_t i, size_t k, uintptr_t *value)
{
    const mt_leak_self *me = ctx;
    if (i == me->nworld) {
        if (k >= me->nown_regs)
            return false;
        *value = me->own_regs[k];
        return true;
    }
    int state;
    const mt_world_thread *w = mt_world_thread_at(i, &state);
    if (state != MT_WORLD_STOPPED || k >= w->nregs)
        return false;
    *value = w->regs[k];
    return true;
}

static unsigned stack_self(void *ctx, uint32_t id, const uintptr_t **frames)
{
    (void)ctx;
    return mt_stack_get(id, frames);
}

/* glibc's static TLS layout (x86-64 and aarch64 alike put the thread
 * pointer at the thread's descriptor): the static TLS block of a thread
 * spans [tp + tcb - static_size, tp + tcb) where static_size comes from
 * _dl_get_tls_static_info and tcb is the descriptor's size (struct pthread,
 * which also holds pthread_setspecific's first values); the descriptor's
 * second word is the DTV, whose entries point at the dynamic TLS blocks of
 * dlopened modules, and whose word before the first entry is its length.
 * Found as LeakSanitizer finds them (through glibc's private symbols),
 * before the threads are stopped (dlsym takes the loader's lock). */
static mt_leak_source source_of(mt_leak_self *me)
{
    mt_leak_source src = { me, mt_leak_read_self, mapping_self, modules_self,
                           0,  thread_self,       reg_self,     0,
                           0,  stack_self };
    void (*get)(size_t *, size_t *) =
        (void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
    const unsigned *tcb = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
    size_t static_size = 0, align;
    if (get)
        get(&static_size, &align);
    src.tcb_size = tcb ? *tcb : 2304; /* glibc 2.3x's struct pthread on x86-64 */
    src.static_size = static_size ? static_size : src.tcb_size;
    return src;
}

/* ------------------------------------------------------------ the exiting thread */

/* The exiting thread's registers as the exit handler found them (UC),
 * after its caller's at the call to exit (see exit_caller_sp). */
static void add_context_registers(mt_leak_self *me, const ucontext_t *uc)
{
    /* Only the callee-saved ones: the others are dead at the handler's
     * entry (it takes no argument) and hold what exit's code last left
     * in them, stale pointers included. */
#if defined(__x86_64__)
    static const int saved[] = { REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14, REG_R15 };
    for (unsigned k = 0; k < sizeof saved / sizeof *saved; k++)
        me->own_regs[me->nown_regs++] = (uintptr_t)uc->uc_mcontext.gregs[saved[k]];
#elif defined(__aarch64__)
    for (unsigned k = 19; k < 31; k++) /* x19-x28, the frame pointer, the link register */
        me->own_regs[me->nown_regs++] = (uintptr_t)uc->uc_mcontext.regs[k];
#else
    (void)me, (void)uc;
#endif
}

/* The stack pointer of the function that called exit (main's caller,
 * __libc_start_call_main, when main returned), found by unwinding the
 * calling thread up to exit's frame; 0 when exit is not on this stack (a
 * handler run otherwise). What lies below it is dead: the frames of main
 * (when it returned) and of everything main called, which exit, its
 * handlers and memtrace's own frames now reuse, their unwritten slots still
 * holding the stale pointers of the calls made there (the malloc that
 * returned a block now lost among them). valgrind and LeakSanitizer scan a
 * stack from its pointer as well, but their frames at exit do not overlay
 * the program's. The caller's callee-saved registers as they were at the
 * call (which exit's frames may have saved below that stack pointer) go to
 * REGS[0..*NREGS). */
static uintptr_t exit_caller_sp(uintptr_t regs[12], unsigned *nregs)
{
    *nregs = 0;
    unw_context_t ctx;
    unw_cursor_t c;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&c, &ctx) != 0)
        return 0;
    unw_word_t exit_fn = (unw_word_t)(uintptr_t)exit;
    for (int depth = 0; depth < 256 && unw_step(&c) > 0; depth++) {
        unw_proc_info_t pi;
        if (unw_get_proc_info(&c, &pi) != 0 || pi.start_ip != exit_fn)
            continue;
        unw_word_t sp;
        if (unw_step(&c) <= 0 || unw_get_reg(&c, UNW_REG_SP, &sp) != 0)
            return 0;
#if defined(__x86_64__)
        static const int saved[] = { UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
                                     UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15 };
#elif defined(__aarch64__)
        static const int saved[] = { UNW_AARCH64_X19, UNW_AARCH64_X20, UNW_AARCH64_X21,
                                     UNW_AARCH64_X22, UNW_AARCH64_X23, UNW_AARCH64_X24,
                                     UNW_AARCH64_X25, UNW_AARCH64_X26, UNW_AARCH64_X27,
                                     UNW_AARCH64_X28, UNW_AARCH64_X29 };
#else
        static const int saved[1] = { 0 };
        return 0;
#endif
        for (unsigned k = 0; k < sizeof saved / sizeof *saved && k < 12; k++) {
            unw_word_t v;
            if (unw_get_reg(&c, saved[k], &v) == 0)
                regs[(*nregs)++] = (uintptr_t)v;
        }
        return (uintptr_t)sp;
    }
    return 0;
}


/* ------------------------------------------------------------ the target */

mt_leak_source mt_leak_self_begin(mt_leak_self *me, const ucontext_t *uc, uintptr_t stack_from,
                                  mt_leak_vec *un)
{
    *me = (mt_leak_self){ .maps = { .item = sizeof(mt_span) }, .un = un };
    /* The exit handler's caller frames are live; when exit's caller is
     * known, only its frame and those above it are. */
    uintptr_t caller_sp = exit_caller_sp(me->own_regs, &me->nown_regs);
    me->own_sp = caller_sp > stack_from ? caller_sp : stack_from;
    add_context_registers(me, uc);
    return source_of(me);
}

bool mt_leak_self_stopped(mt_leak_self *me, mt_leak_source *src)
{
    if (!read_maps(&me->maps))
        return false;
    me->nworld = mt_world_count();
    src->nthreads = me->nworld + 1; /* the exiting thread last */
    return true;
}

void mt_leak_self_end(mt_leak_self *me)
{
    mt_leak_vec_free(&me->maps);
}
