/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Start-up: the real allocator's lookup, the settings, the tables and the
 * descriptor, once, on the process's first allocation (or the library's
 * constructor, whichever comes first); memtrace's fork handlers; and the
 * stop-recording policy when a metadata mapping fails. None of it is on the
 * hot path, which reaches it only through mt_start (state.h). */
#include "runtime/startup.h"
#include "runtime/startup_pages.h"

#include "base/atomic.h"
#include "base/common.h"
#include "base/config.h"
#include "base/lazy_libs.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "base/upcalls.h"
#include "capture/capture.h"
#include "capture/quarantine.h"
#include "runtime/attach.h"
#include "capture/state.h"
#include "capture/sample_fast.h"
#include "capture/sample.h"
#include "leak/leak_check.h"
#include "profile/profiler.h"
#include "report/describe.h"
#include "report/heap_error.h"
#include "runtime/children.h"
#include "runtime/descriptor.h"
#include "runtime/record_end.h"
#include "runtime/guard_signal.h"
#include "runtime/plt_entry.h"
#include "runtime/recording.h"
#include "store/freed_history.h"
#include "store/internal_heap.h"
#include "store/live_table.h"
#include "store/modules.h"
#include "store/stack_store.h"
#include "store/threads.h"
#include "symbolize/symbolize.h"
#include "timeline/timeline.h"
#include "tags/tags_out.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void mt_metadata_failed(const char *what, size_t size, int err)
{
    if (mt_atomic_exchange_acq_rel(&mt_phase, MT_STOPPED) == MT_STOPPED)
        return;
    mt_warn("stopped recording at allocation #%lu: could not map %zu bytes for the %s (%s); "
            "the program runs on untraced",
            (unsigned long)(mt_seq_last() + 1), size, what, strerror(err));
}

int mt_recording_stopped(void)
{
    return mt_atomic_load_acquire(&mt_phase) == MT_STOPPED;
}

/* Set up and not stopped: recording, or turned off (MT_PAUSED, MT_RESUMING). */
static bool set_up(void)
{
    int phase = mt_atomic_load_acquire(&mt_phase);
    return phase == MT_READY || phase == MT_PAUSED || phase == MT_RESUMING;
}

/* The locks this thread's fork_prepare took. A fork from a signal handler
 * that interrupted memtrace in this thread skips the locks that code holds:
 * it releases them itself once the handler returns, in both processes. */
static MT_TLS struct {
    bool modules, iheap, stack, unwind;
    mt_live_taken shards;
} fork_took;

static void fork_prepare(void)
{
    fork_took.modules = mt_modules_lock();
    fork_took.unwind = mt_unwind_cfi_lock();
    fork_took.iheap = mt_iheap_lock();
    fork_took.stack = mt_stack_lock();
    fork_took.shards = mt_live_lock_all();
    mt_passthrough++;
    mt_fork_window++;
}

static void fork_release(void)
{
    mt_fork_window--;
    mt_passthrough--;
    mt_live_unlock_all(&fork_took.shards);
    if (fork_took.stack)
        mt_stack_unlock();
    if (fork_took.iheap)
        mt_iheap_unlock();
    if (fork_took.unwind)
        mt_unwind_cfi_unlock();
    if (fork_took.modules)
        mt_modules_unlock();
}

static void fork_child(void)
{
    bool took_all = fork_took.modules && fork_took.unwind && fork_took.iheap && fork_took.stack &&
                    mt_live_took_all(&fork_took.shards);
    fork_release();
    mt_modules_child_forget_unloads_in_progress();
    mt_tl_fork_child(); /* records nothing: the writer is the parent's */
    mt_quarantine_fork_child();
    mt_heap_errors_fork_child();
    if (took_all) /* else the interrupted code's locks carry the old token */
        mt_lock_forget_token();
}

static void *next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* The flags of unshare that the kernel takes only from a single-threaded
 * process (CLONE_NEWUSER implies CLONE_THREAD). */
#define SINGLE_THREAD_FLAGS (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

int mt_unshare(int flags)
{
    static int (*real_unshare)(int);
    int was = mt_enter();
    if (!real_unshare)
        real_unshare = (int (*)(int))next_symbol("unshare");
    bool paused = (flags & SINGLE_THREAD_FLAGS) && mt_profiler_pause();
    bool tl_paused = (flags & SINGLE_THREAD_FLAGS) && mt_tl_pause();
    mt_leave(was);
    int rc = real_unshare ? real_unshare(flags) : (int)syscall(SYS_unshare, flags);
    int saved = errno;
    if (tl_paused)
        mt_tl_resume();
    if (paused)
        mt_profiler_resume();
    errno = saved;
    return rc;
}

/* Every setns: a user namespace wants a single thread, a mount namespace
 * an unshared filesystem context, and an nstype of 0 can be either. */
int mt_setns(int fd, int nstype)
{
    static int (*real_setns)(int, int);
    int was = mt_enter();
    if (!real_setns)
        real_setns = (int (*)(int, int))next_symbol("setns");
    bool paused = mt_profiler_pause();
    bool tl_paused = mt_tl_pause();
    mt_leave(was);
    int rc = real_setns ? real_setns(fd, nstype) : (int)syscall(SYS_setns, fd, nstype);
    int saved = errno;
    if (tl_paused)
        mt_tl_resume();
    if (paused)
        mt_profiler_resume();
    errno = saved;
    return rc;
}

/* The names of mt_ext's next definitions (capture/interposed.def's
 * NEXT_EXT rows). */
#define NEXT_EXT(e) [MT_X_##e] = MT_NAME_KEEP
#define MT_NAME_KEEP(name) #name,
#define NEXT_REAL(name)
#define NEXT_NONE(name)
#define MT_INTERPOSE(cls, next, ret, name, params, body) next(name)
static const char *const ext_names[MT_EXT_COUNT] = {
#include "capture/interposed.def"
};
#undef MT_INTERPOSE
#undef NEXT_NONE
#undef NEXT_REAL
#undef MT_NAME_KEEP
#undef NEXT_EXT

/* Fills mt_ext (state.h) on the first call of an entry point beyond the C
 * allocator's. Takes no memtrace lock (dlsym takes the loader's, which a
 * thread running a library's constructor inside dlopen already holds):
 * threads that race store the same values. dlsym's own allocations go to
 * the internal heap (mt_busy). */
/* Whether the program replaces a C++ operator (state.h's mt_cxx_replaced):
 * the definition a lookup finds is another module's than memtrace's, and
 * no canonical PLT entry (plt_entry.h). */
static bool cxx_replaced(void)
{
    Dl_info ours, theirs;
    if (!dladdr((void *)cxx_replaced, &ours))
        return false;
    for (int i = MT_X_NEW; i <= MT_X_DELA_AL_NT; i++) {
        void *used = dlsym(RTLD_DEFAULT, ext_names[i]);
        if (used && dladdr(used, &theirs) && theirs.dli_fbase != ours.dli_fbase &&
            !mt_is_canonical_plt(used, ext_names[i]))
            return true;
    }
    return false;
}

MT_COLD void mt_ext_lookup(void)
{
    int was = mt_enter();
    for (int i = 0; i < MT_EXT_COUNT; i++)
        mt_atomic_store_relaxed(&mt_ext[i], next_symbol(ext_names[i]));
    mt_cxx_replaced = cxx_replaced();
    mt_sample_ext_found();
    mt_leave(was);
    mt_atomic_store_release(&mt_ext_ready,
                            1); /* pairs with the acquire in capture/record.h's mt_ext_get() */
}

/* Says once, at start-up, when the program's calls to malloc do not reach
 * memtrace: an allocator (or the executable itself, which comes first in
 * the lookup order) defines malloc ahead of libmemtrace.so, so the blocks
 * the program allocates go unrecorded. RTLD_DEFAULT finds what the
 * program's own references bind to: the executable's definition first,
 * then the preloaded libraries' in order. */
static void warn_if_not_first(void)
{
    void *used = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info theirs, ours;
    if (!used || !dladdr((void *)warn_if_not_first, &ours))
        return;
    if (dladdr(used, &theirs) && theirs.dli_fbase == ours.dli_fbase)
        return;
    if (mt_is_canonical_plt(used, "malloc")) /* a non-PIE program's &malloc */
        return;
    const char *who = theirs.dli_fname && theirs.dli_fname[0] ? theirs.dli_fname
                                                              : "the program itself";
    mt_warn("malloc here is %s's, not memtrace's: the program's allocations go untraced; "
            "put libmemtrace.so first in LD_PRELOAD (LD_PRELOAD=\"%s ...\")",
            who, ours.dli_fname);
}

/* The real allocator: the next definitions after this library's of
 * capture/interposed.def's NEXT_REAL rows. */
static void find_real(void)
{
#define NEXT_REAL(name) mt_real.next_##name = next_symbol(#name);
#define NEXT_NONE(name)
#define NEXT_EXT(e) NEXT_NONE
#define MT_INTERPOSE(cls, next, ret, name, params, body) next(name)
#include "capture/interposed.def"
#undef MT_INTERPOSE
#undef NEXT_EXT
#undef NEXT_NONE
#undef NEXT_REAL
}

/* Whether the malloc the program's calls reach is another memtrace's: the
 * module that defines it is the first to define memtrace_state too, and
 * it is not this one. One memtrace per process records; a second copy
 * (linked with -lmemtrace while the profiler is preloaded, or preloaded
 * twice) would only say that malloc is not its own, warn about settings
 * meant for the other build and give a second leak verdict. */
static bool another_owns_malloc(void)
{
    void *used = dlsym(RTLD_DEFAULT, "malloc");
    void *state = dlsym(RTLD_DEFAULT, "memtrace_state");
    Dl_info theirs, owner_state, ours;
    return used && state && dladdr((void *)another_owns_malloc, &ours) && dladdr(used, &theirs) &&
           dladdr(state, &owner_state) && theirs.dli_fbase != ours.dli_fbase &&
           owner_state.dli_fbase == theirs.dli_fbase;
}

/* Runs on the first allocation of the process, before any thread but the
 * main one exists; a call from another thread meanwhile sees INITIALIZING
 * and is served by the internal heap. */
MT_COLD void mt_start(void)
{
    int expected = MT_UNINIT;
    if (!mt_atomic_cas_acq_rel(&mt_phase, &expected, MT_INITIALIZING))
        return;
    int was = mt_enter();
    find_real();
    /* Decided here, not in the constructor alone: the other copy may call
     * this one's entry points before this one's constructor runs (its next
     * malloc is this copy's when this one is linked and the other
     * preloaded, and libstdc++ allocates in its own initializer). Standing
     * aside, this copy's entry points pass every call to the real
     * allocator untraced, as during start-up: the phase stays
     * INITIALIZING, and nothing else here runs. */
    if (another_owns_malloc()) {
        mt_aside = true;
        mt_leave(was);
        return;
    }
    if (!mt_real.next_malloc || !mt_real.next_free || !mt_real.next_calloc ||
        !mt_real.next_realloc || !mt_real.next_posix_memalign) {
        /* Without a real allocator there is nothing to forward to: stay in
         * INITIALIZING and serve everything from the internal heap. */
        mt_leave(was);
        return;
    }
    /* Before anything is said: every warning and report goes to this copy
     * of the stderr the process started with, not to what holds fd 2 later
     * (programs such as ls close it in their own atexit; daemons open data
     * files there). */
    mt_err_keep();
    mt_config_load();
    mt_sample_start();
    mt_tl_arm();
    /* What the answers and reports need, taken while there is address
     * space: a program may fill it later (ulimit -v). */
    mt_iheap_reserve();
    mt_os_stack_reserve(&mt_own_stack, MT_OWN_STACK_SIZE);
    mt_freed_init(mt_cfg.freed);
    mt_quarantine_init();
    mt_thread_number();
    mt_descriptor_publish();
    mt_capture_init();
    mt_guard_start();
    mt_sym_set_unloaded_lookup(mt_modules_find_unloaded, mt_modules_generation);
    mt_sym_read_debug_dir();
    if (mt_cfg.symbolize == MT_SYMBOLIZE_LATER)
        mt_sym_self_later();
    pthread_atfork(fork_prepare, fork_release, fork_child);
    /* Loaded by `memtrace attach`: off until memtrace_attach turns it on. */
    bool start = mt_cfg.start && !mt_attach_late_load();
    mt_recording_init(start);
    mt_leave(was);
    expected = MT_INITIALIZING; /* not if a mapping failed meanwhile */
    mt_atomic_cas_acq_rel(&mt_phase, &expected, start ? MT_READY : MT_PAUSED);
    /* Before the profiler registers its exit report: the check then runs
     * after it, and its exit status (leaks found) cannot come first. */
    /* The heap errors' exit status before the leak check (it runs after
     * it: the leak status, asked first, wins), their check after it (it
     * runs before the leak check's verdict). Here for that order, as the
     * leak check: atexit allocates, with its lock held, only past its
     * first 32 handlers, so the first allocation of the process is not
     * atexit's own. */
    mt_heap_errors_register_status();
    if (mt_cfg.leak_check)
        mt_leak_check_register();
    mt_heap_errors_register_check();
    mt_profiler_start();
    mt_tags_out_start();
    mt_shadow_tags(); /* MEMTRACE_TAGS puts tags in use */
}

__attribute__((constructor)) static void mt_constructor(void)
{
    /* First, even after a malloc started memtrace: what is mapped now is
     * the program's (runtime/startup_pages.h). */
    mt_startup_pages_mark();
    if (mt_atomic_load_acquire(&mt_phase) == MT_UNINIT)
        mt_start();
    if (mt_aside) {
        mt_startup_pages_drop(false);
        return;
    }
    /* Here, not in mt_start: that may run inside the program's first
     * malloc, which may be atexit's own (its lock held), or dlsym's. */
    if (set_up()) {
        int was = mt_enter();
        if (!mt_attach_late_load())
            warn_if_not_first();
        mt_recording_install_signal();
        mt_lazy_libs_start();
        mt_leave(was);
        mt_record_file_start();
    }
    /* Before the program's main, whatever state memtrace is in: the
     * children must not be traced even if this process is not. */
    mt_children_lookup();
    mt_children_untrace();
    if (set_up() && mt_cfg.unwind == MT_UNWIND_CHECK) {
        int was = mt_enter();
        atexit(mt_describe_check_report);
        mt_leave(was);
    }
    /* Last: whatever start-up ran or read is done with. */
    mt_startup_pages_drop(set_up() && mt_cfg.sample);
}
