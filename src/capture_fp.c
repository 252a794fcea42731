/* The frame-pointer unwinder (x86-64 and other ABIs where a frame is
 * [saved frame pointer][return address]). It follows the chain only while
 * each frame lies inside the calling thread's stack mapping, is aligned, and
 * moves towards the stack's base, so a frame without a frame pointer ends
 * the walk early (a short stack) and never makes it read outside the stack,
 * whatever value such code left in the frame-pointer register. The library
 * is built with -fno-omit-frame-pointer so that its own frames chain to the
 * program's. */
#include "capture.h"

#include "common.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static MT_TLS uintptr_t stack_low;  /* lowest address of this thread's stack */
static MT_TLS uintptr_t stack_base; /* highest address of this thread's stack */
static MT_TLS int stack_known;      /* 1 known, -1 could not be found */

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

/* One line of /proc/self/maps, "LO-HI perms ... [name]": when it is the
 * mapping holding SP, sets the stack bounds. The main thread's "[stack]"
 * grows down into the gap below it, which no other mapping may take (the
 * kernel keeps its guard gap), so its low bound is the end of the mapping
 * before it, PREV_END. Returns HI. */
static uintptr_t maps_line(const char *line, const char *end, uintptr_t sp, uintptr_t prev_end)
{
    const char *p = line;
    uintptr_t lo = parse_hex(&p);
    if (*p++ != '-')
        return prev_end;
    uintptr_t hi = parse_hex(&p);
    if (sp >= lo && sp < hi) {
        bool grows = end - line >= 7 && memcmp(end - 7, "[stack]", 7) == 0;
        stack_low = grows ? prev_end : lo;
        stack_base = hi;
        stack_known = 1;
    }
    return hi;
}

/* Learns the bounds of the stack mapping holding SP from /proc/self/maps,
 * with system calls only. pthread_getattr_np would take the thread's lock
 * and fopen (allocating), and the capture may run inside that very call
 * (Rust's std asks for its stack bounds first thing; design notes, trap
 * 10). Raw system calls are not cancellation points either. */
static void find_stack(uintptr_t sp)
{
    stack_known = -1;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    size_t have = 0;
    bool skipping = false; /* inside a line longer than the buffer */
    uintptr_t prev_end = 0;
    while (stack_known < 0) {
        long n = syscall(SYS_read, fd, buf + have, sizeof buf - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        const char *line = buf, *stop = buf + have, *nl;
        while ((nl = memchr(line, '\n', (size_t)(stop - line))) != NULL) {
            if (!skipping)
                prev_end = maps_line(line, nl, sp, prev_end);
            skipping = false;
            line = nl + 1;
        }
        have = (size_t)(stop - line);
        if (have == sizeof buf) { /* a line longer than the buffer: its */
            if (!skipping)        /* address range was at its start */
                prev_end = maps_line(buf, buf + 1, sp, prev_end);
            skipping = true;
            have = 0;
        }
        memmove(buf, line, have);
    }
    syscall(SYS_close, fd);
}

MT_NOINLINE unsigned mt_unwind_fp(void **buf, unsigned n)
{
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (MT_UNLIKELY(stack_known == 0))
        find_stack(fp);
    if (stack_known < 0)
        return 0;
    uintptr_t limit = stack_base;
    if (fp < stack_low || fp >= limit)
        return 0; /* on a signal stack or a fiber's: libunwind takes it */
    unsigned k = 0;
    /* Invariant: stack_low <= fp < limit, and the walk only moves up, so
     * every word read lies in this thread's stack mapping. Written as a
     * difference: fp + 16 wraps past zero for fp near the top of the
     * address space. */
    while (k < n && (fp & (sizeof(uintptr_t) - 1)) == 0 && limit - fp >= 2 * sizeof(uintptr_t)) {
        const uintptr_t *frame = (const uintptr_t *)fp;
        uintptr_t next = frame[0], ret = frame[1];
        if (ret < 4096)
            break;
        buf[k++] = (void *)ret;
        if (next <= fp || next >= limit)
            break;
        fp = next;
    }
    return k;
}
