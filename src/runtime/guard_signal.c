/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The guard pages' SIGSEGV handler (guard_signal.h). A fault in the pool
 * is explained in the heap errors' report (mt_heap_error_report: the
 * access's own stack, unwound from the signal's context, read or write
 * from the fault's error code, the block's allocation and free), once per
 * faulting address and instruction (after it memtrace_on_error, and
 * MEMTRACE_ON_ERROR=abort aborts there); then every SIGSEGV, in the pool or
 * not, takes the course it would have taken without memtrace: the
 * program's handler is called, or, for the default action (or SIG_IGN,
 * which the kernel does not honour for a fault), the default is restored
 * and the faulting instruction runs again, so the process ends by the
 * signal with a core where the limit allows. The handler is installed
 * only with MEMTRACE_GUARD_SAMPLE > 0; a program that sets its own later
 * (sigaction, signal, bsd_signal, sysv_signal, sigset, sigignore: libc's
 * own call its internal sigaction, which no interposition sees) sets the
 * action memtrace calls after its report. */
#define UNW_LOCAL_ONLY
#include "runtime/guard_signal.h"

#include "base/common.h"
#include "base/config.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "capture/guard.h"
#include "report/heap_error.h"
#include "store/live_table.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t signal_fn(int, __sighandler_t);

static void *real_sigaction; /* libc's sigaction, once looked up */
static bool installed;
static mt_lock program_lock;
static struct sigaction program_act; /* the program's SIGSEGV action */

/* libc's NAME, the next definition, looked up once into *SLOT; NULL, with
 * errno ENOSYS, when there is none. */
static void *next_libc(const char *name, void **slot)
{
    if (!*slot)
        *slot = dlsym(RTLD_NEXT, name);
    if (!*slot)
        errno = ENOSYS;
    return *slot;
}

/* libc's sigaction (NULL, errno ENOSYS, when there is none). */
static sigaction_fn *get_sigaction(void)
{
    return (sigaction_fn *)next_libc("sigaction", &real_sigaction);
}

/* The faulting access's stack: its pc first (as a return address, pc + 1,
 * since the formatter names the byte before each), then its callers. */
static unsigned access_stack(ucontext_t *uc, uintptr_t *frames, unsigned max)
{
    unw_cursor_t c;
    if (unw_init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) != 0)
        return 0;
    unsigned n = 0;
    do {
        unw_word_t ip;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        frames[n] = n == 0 ? (uintptr_t)ip + 1 : (uintptr_t)ip;
        n++;
    } while (n < max && unw_step(&c) > 0);
    return n;
}

static void report_on_stack(void *arg)
{
    mt_heap_error_report(arg);
}

/* The program's action is a handler (not the default, not SIG_IGN). */
static bool program_handles(const struct sigaction *a)
{
    return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction != NULL
                                      : a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* The report of a fault at ADDR on block B: the guard sees the first byte
 * the access touched, so one byte, at its offset (an underflow: the bytes
 * from there to the block's start). */
static void describe_fault(struct mt_heap_error *e, uintptr_t addr, const mt_guard_block *b)
{
    e->ptr = b->start;
    e->size = b->size;
    e->offset = (int64_t)(addr - b->start);
    e->bytes = 1;
    e->where = "a fault on a guard page";
    if (b->state == MT_GUARD_FREED) {
        e->kind = MT_HEAP_USE_AFTER_FREE;
        e->freed = 1;
        e->alloc_seq = b->alloc_seq, e->free_seq = b->free_seq;
        e->alloc_stack = b->alloc_stack, e->free_stack = b->free_stack;
        e->alloc_thread = b->alloc_thread, e->free_thread = b->free_thread;
        return;
    }
    e->kind = addr < b->start ? MT_HEAP_UNDERFLOW : MT_HEAP_OVERFLOW;
    if (addr < b->start)
        e->bytes = b->start - addr;
    mt_live_entry r;
    bool unlocked = false;
    if (mt_live_find(b->start, &r, &unlocked)) {
        e->alloc_seq = r.seq;
        e->alloc_thread = mt_entry_thread(&r);
        e->alloc_stack = r.stack;
    }
}

static void explain(uintptr_t addr, ucontext_t *uc)
{
    /* A handler that returns runs the access again: one report for it. */
    static uintptr_t last_addr, last_pc;
    uintptr_t pc = 0;
    struct mt_heap_error e = { .access = MT_HEAP_ACCESS_UNSEEN };
#if defined(__x86_64__)
    pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    /* Bit 1 of the page fault's error code: the access was a write. */
    e.access = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? MT_HEAP_WRITE : MT_HEAP_READ;
#endif
    if (addr == last_addr && pc == last_pc)
        return;
    last_addr = addr, last_pc = pc;
    mt_guard_block b;
    if (!mt_guard_block_at(addr, &b))
        return;
    int was = mt_enter();
    describe_fault(&e, addr, &b);
    uintptr_t frames[MT_MAX_DEPTH];
    e.frames = frames;
    e.depth = access_stack(uc, frames, mt_cfg.depth);
    mt_lock_acquire(&program_lock);
    bool handled = program_handles(&program_act);
    mt_lock_release(&program_lock);
    mt_leave(was);
    /* The report takes the symbolizer: memtrace's own stack, not a
     * signal stack or what is left of the program's. MEMTRACE_ON_ERROR=
     * abort's abort is this thread's, back on the handler's stack: the
     * core's backtrace goes through the signal's frame to the access and
     * on to main. */
    e.caller_counts = 1;
    mt_os_on_stack(&mt_own_stack, report_on_stack, &e);
    mt_error_reported();
    mt_warn("the fault goes on to %s",
            handled ? "the program's SIGSEGV handler"
                    : "SIGSEGV's default action (the process ends, with a core where the "
                      "limit allows)");
}

/* What SIGSEGV would have done without memtrace. */
static void go_on(int sig, siginfo_t *si, void *uc)
{
    mt_lock_acquire(&program_lock);
    struct sigaction prev = program_act;
    if (program_handles(&prev) && (prev.sa_flags & SA_RESETHAND)) {
        memset(&program_act, 0, sizeof program_act);
        program_act.sa_handler = SIG_DFL;
    }
    mt_lock_release(&program_lock);
    if (!program_handles(&prev)) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        get_sigaction()(sig, &dfl, NULL);
        if (si->si_code <= 0) /* sent, not a fault: send it again */
            raise(sig);
        return; /* a fault: the access runs again and ends the process */
    }
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &prev.sa_mask, &old);
    if (prev.sa_flags & SA_SIGINFO)
        prev.sa_sigaction(sig, si, uc);
    else
        prev.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    uintptr_t addr = (uintptr_t)si->si_addr;
    if (si->si_code > 0 && mt_guard_owns((void *)addr))
        explain(addr, uc);
    go_on(sig, si, uc);
    errno = saved;
}

void mt_guard_start(void)
{
    long every = mt_setting_long(MT_SET_GUARD_SAMPLE);
    long slots = mt_setting_long(MT_SET_GUARD_SLOTS);
    if (every == 0)
        return;
    if (!get_sigaction() || !mt_guard_init((unsigned long)every, (unsigned long)slots)) {
        mt_warn("MEMTRACE_GUARD_SAMPLE=%ld: the guard pages' pool (%ld slots) cannot be set "
                "up; no guard pages",
                every, slots);
        return;
    }
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_segv;
    act.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&act.sa_mask);
    if (get_sigaction()(SIGSEGV, &act, &program_act) != 0) {
        mt_warn("MEMTRACE_GUARD_SAMPLE=%ld: SIGSEGV's handler cannot be installed (%s); no "
                "report of a fault on a guard page",
                every, strerror(errno));
        return;
    }
    installed = true;
}

int mt_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (MT_LIKELY(!installed || sig != SIGSEGV)) {
        sigaction_fn *fn = get_sigaction();
        return fn ? fn(sig, act, old) : -1;
    }
    mt_lock_acquire(&program_lock);
    if (old)
        *old = program_act;
    if (act)
        program_act = *act;
    mt_lock_release(&program_lock);
    return 0;
}

/* HANDLER with FLAGS becomes the program's SIGSEGV action (installed),
 * SIGSEGV in its mask when SELF: the handler it replaces. */
static __sighandler_t program_handler(__sighandler_t handler, int flags, bool self)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    act.sa_flags = flags;
    sigemptyset(&act.sa_mask);
    if (self)
        sigaddset(&act.sa_mask, SIGSEGV);
    mt_sigaction(SIGSEGV, &act, &old);
    return old.sa_handler;
}

/* signal and its variants for SIGSEGV while the handler is installed:
 * libc's semantics (FLAGS, and SIG in its own mask unless SA_NODEFER), the
 * action kept as the program's. Otherwise libc's own NAME (*REAL), with
 * its results and errno. */
static __sighandler_t signal_as(const char *name, void **real, int flags, int sig,
                                __sighandler_t handler)
{
    if (MT_LIKELY(!installed || sig != SIGSEGV)) {
        signal_fn *fn = (signal_fn *)next_libc(name, real);
        return fn ? fn(sig, handler) : SIG_ERR;
    }
    if (handler == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    return program_handler(handler, flags, !(flags & SA_NODEFER));
}

/* glibc's signal and bsd_signal: BSD semantics. */
__sighandler_t mt_signal(int sig, __sighandler_t handler)
{
    static void *real;
    return signal_as("signal", &real, SA_RESTART, sig, handler);
}

__sighandler_t mt_bsd_signal(int sig, __sighandler_t handler)
{
    static void *real;
    return signal_as("bsd_signal", &real, SA_RESTART, sig, handler);
}

/* sysv_signal, and __sysv_signal, which strict ISO C's signal is
 * (glibc's signal.h without _DEFAULT_SOURCE): the handler is reset to the
 * default when it is called, and not blocked while it runs. */
__sighandler_t mt_sysv_signal(int sig, __sighandler_t handler)
{
    static void *real;
    return signal_as("sysv_signal", &real, SA_RESETHAND | SA_NODEFER, sig, handler);
}

/* SysV's sigset: DISP SIG_HOLD blocks SIG and answers its action (SIG_HOLD
 * if it was blocked already); any other DISP becomes SIG's action (no
 * flags, an empty mask) and SIG is unblocked; the answer is the action it
 * replaced, or SIG_HOLD if SIG was blocked. glibc's, for SIGSEGV while the
 * handler is installed, with the action kept as the program's. */
__sighandler_t mt_sigset(int sig, __sighandler_t disp)
{
    if (MT_LIKELY(!installed || sig != SIGSEGV)) {
        static void *real;
        signal_fn *fn = (signal_fn *)next_libc("sigset", &real);
        return fn ? fn(sig, disp) : SIG_ERR;
    }
    sigset_t one, was;
    sigemptyset(&one);
    sigaddset(&one, sig);
    if (disp == SIG_HOLD) {
        if (pthread_sigmask(SIG_BLOCK, &one, &was) != 0)
            return SIG_ERR;
        if (sigismember(&was, sig))
            return SIG_HOLD;
        struct sigaction old;
        mt_sigaction(sig, NULL, &old);
        return old.sa_handler;
    }
    if (disp == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    __sighandler_t old = program_handler(disp, 0, false);
    if (pthread_sigmask(SIG_UNBLOCK, &one, &was) != 0)
        return SIG_ERR;
    return sigismember(&was, sig) ? SIG_HOLD : old;
}

/* SysV's sigignore: SIG_IGN becomes SIG's action (0, or -1 and errno). */
int mt_sigignore(int sig)
{
    if (MT_LIKELY(!installed || sig != SIGSEGV)) {
        static void *real;
        int (*fn)(int) = (int (*)(int))next_libc("sigignore", &real);
        return fn ? fn(sig) : -1;
    }
    program_handler(SIG_IGN, 0, false);
    return 0;
}
