/* The bounds of the calling thread's stack, learned once per thread from
 * /proc/self/maps with raw system calls (no libc lock, no allocation, no
 * cancellation point), for unwinders that must never read outside it. */
#include "store/stack_bounds.h"

#include "base/common.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

MT_TLS uintptr_t mt_stack_low;  /* lowest address of this thread's stack */
MT_TLS uintptr_t mt_stack_base; /* highest address of this thread's stack */
MT_TLS int mt_stack_known;      /* 1 known, -1 could not be found */

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
        if (d == 16)
            return v;
        v = v << 4 | d;
    }
}

/* A mapping the search below may pick: its bounds as a stack. */
typedef struct {
    bool found;
    uintptr_t low, base;
} candidate;

typedef struct {
    uintptr_t sp, tls;
    candidate at_sp, at_tls, main_stack;
    bool sp_in_tls_mapping;
} search;

/* One line of /proc/self/maps, "LO-HI perms ... [name]": notes it if it
 * holds SP, this thread's TLS, or is the main thread's "[stack]". That one
 * grows down into the gap below it, which no other mapping may take (the
 * kernel keeps its guard gap), so its low bound is the end of the mapping
 * before it, PREV_END. Returns HI. */
static uintptr_t maps_line(const char *line, const char *end, search *q, uintptr_t prev_end)
{
    const char *p = line;
    uintptr_t lo = parse_hex(&p);
    if (*p++ != '-')
        return prev_end;
    uintptr_t hi = parse_hex(&p);
    bool grows = end - line >= 7 && memcmp(end - 7, "[stack]", 7) == 0;
    candidate c = { true, grows ? prev_end : lo, hi };
    if (q->sp >= lo && q->sp < hi)
        q->at_sp = c;
    if (q->tls >= lo && q->tls < hi) {
        q->at_tls = c;
        q->sp_in_tls_mapping = q->sp >= lo && q->sp < hi;
    }
    if (grows)
        q->main_stack = c;
    return hi;
}

/* Learns this thread's stack from its maps, with system calls only.
 * pthread_getattr_np would take the thread's lock and fopen (allocating),
 * and the capture may run inside that very call (Rust's std asks for its
 * stack bounds first thing; design notes, trap 10). Raw system calls are
 * not cancellation points either.
 *
 * The mapping holding SP is the stack, unless SP is on some other stack
 * (a fiber's, an alternate signal stack) at the thread's first capture:
 * then the thread's own is the main thread's "[stack]", or, for a thread
 * glibc created, the mapping holding its TLS (glibc places a thread's TLS
 * at the top of its stack mapping). Were SP's mapping kept, every later
 * capture on the real stack would be handed to libunwind. */
void mt_stack_find(uintptr_t sp)
{
    mt_stack_known = -1;
    /* The calling thread's view: /proc/self/maps is empty once main has
     * called pthread_exit, and threads may still be started after. */
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    search q = { .sp = sp, .tls = (uintptr_t)&mt_stack_known };
    char buf[4096];
    size_t have = 0;
    bool skipping = false; /* inside a line longer than the buffer */
    uintptr_t prev_end = 0;
    for (;;) {
        long n = syscall(SYS_read, fd, buf + have, sizeof buf - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        const char *line = buf, *stop = buf + have, *nl;
        while ((nl = memchr(line, '\n', (size_t)(stop - line))) != NULL) {
            if (!skipping)
                prev_end = maps_line(line, nl, &q, prev_end);
            skipping = false;
            line = nl + 1;
        }
        have = (size_t)(stop - line);
        if (have == sizeof buf) { /* a line longer than the buffer: its */
            if (!skipping)        /* address range was at its start */
                prev_end = maps_line(buf, buf + 1, &q, prev_end);
            skipping = true;
            have = 0;
        }
        memmove(buf, line, have);
    }
    syscall(SYS_close, fd);
    bool main_thread = syscall(SYS_gettid) == syscall(SYS_getpid);
    const candidate *c = &q.at_sp;
    bool sp_on_own = q.sp_in_tls_mapping ||
                     (q.main_stack.found && sp >= q.main_stack.low && sp < q.main_stack.base);
    if (!sp_on_own) {
        if (main_thread && q.main_stack.found)
            c = &q.main_stack;
        else if (!main_thread && q.at_tls.found)
            c = &q.at_tls;
    }
    if (!c->found)
        return;
    mt_stack_low = c->low;
    mt_stack_base = c->base;
    mt_stack_known = 1;
}
