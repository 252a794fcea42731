/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The maps parser (mt_os_maps_*, src/base/os.c): the fields of each line,
 * paths with spaces and " (deleted)", a path longer than the buffer, lines
 * split across read() calls, a file without its last newline, and the
 * process's own maps. */
#include "base/os.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char sample[] =
    "55d0c4a00000-55d0c4a02000 r--p 00000000 fd:01 1053  /usr/bin/prog\n"
    "55d0c4a02000-55d0c4a07000 r-xp 00002000 fd:01 1053  /usr/bin/prog\n"
    "55d0c5b00000-55d0c5b21000 rw-p 00000000 00:00 0    [heap]\n"
    "7f00aa000000-7f00aa021000 rw-p 00000000 00:00 0 \n"
    "7f00ab000000-7f00ab010000 r-xp 0000a000 08:02 42   /opt/my lib/lib x.so (deleted)\n"
    "7f00ac000000-7f00ac001000 rw-s 00001000 00:05 77   /dev/shm/a file\n"
    "not a mapping\n"
    "7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0    [stack]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]";

struct want {
    uintptr_t start, end;
    const char *perms;
    uint64_t offset, inode;
    const char *path;
    bool deleted;
};

static const struct want sample_want[] = {
    { 0x55d0c4a00000, 0x55d0c4a02000, "r--p", 0, 1053, "/usr/bin/prog", false },
    { 0x55d0c4a02000, 0x55d0c4a07000, "r-xp", 0x2000, 1053, "/usr/bin/prog", false },
    { 0x55d0c5b00000, 0x55d0c5b21000, "rw-p", 0, 0, "[heap]", false },
    { 0x7f00aa000000, 0x7f00aa021000, "rw-p", 0, 0, "", false },
    { 0x7f00ab000000, 0x7f00ab010000, "r-xp", 0xa000, 42, "/opt/my lib/lib x.so", true },
    { 0x7f00ac000000, 0x7f00ac001000, "rw-s", 0x1000, 77, "/dev/shm/a file", false },
    { 0x7ffd1c000000, 0x7ffd1c021000, "rw-p", 0, 0, "[stack]", false },
    { 0xffffffffff600000, 0xffffffffff601000, "--xp", 0, 0, "[vsyscall]", false },
};
#define NWANT (sizeof sample_want / sizeof *sample_want)

static void expect_mapping(const mt_os_mapping *got, const struct want *w, size_t i)
{
    cr_expect_eq(got->start, w->start, "line %zu: start %#lx", i, (unsigned long)got->start);
    cr_expect_eq(got->end, w->end, "line %zu: end", i);
    cr_expect_str_eq(got->perms, w->perms, "line %zu: perms", i);
    cr_expect_eq(got->offset, w->offset, "line %zu: offset", i);
    cr_expect_eq(got->inode, w->inode, "line %zu: inode", i);
    cr_expect_eq(got->path_len, strlen(w->path), "line %zu: path \"%.*s\"", i, (int)got->path_len,
                 got->path);
    cr_expect(memcmp(got->path, w->path, strlen(w->path)) == 0, "line %zu: path \"%.*s\"", i,
              (int)got->path_len, got->path);
    cr_expect_eq(got->deleted, w->deleted, "line %zu: deleted", i);
    cr_expect(!got->truncated, "line %zu: truncated", i);
}

Test(os_maps, fields_of_a_text)
{
    mt_os_maps m;
    mt_os_maps_text(&m, sample, strlen(sample));
    mt_os_mapping got;
    size_t n = 0;
    while (mt_os_maps_next(&m, &got)) {
        cr_assert_lt(n, NWANT);
        expect_mapping(&got, &sample_want[n], n);
        n++;
    }
    cr_expect_eq(n, NWANT, "the line that is no mapping is skipped, the last one read");
    cr_expect(!m.failed);
    mt_os_maps_text(&m, sample, strlen(sample));
    cr_assert(mt_os_maps_next(&m, &got));
    cr_expect_eq(got.line, sample, "the line as read");
    cr_expect_eq(got.line_len, (size_t)(strchr(sample, '\n') + 1 - sample), "its newline included");
}

/* A pipe holding TEXT, for the parser to read. */
static int pipe_of(const char *text, size_t len)
{
    int fds[2];
    cr_assert(pipe(fds) == 0);
    cr_assert(write(fds[1], text, len) == (ssize_t)len);
    close(fds[1]);
    return fds[0];
}

/* Every buffer size from one line's length to the whole text: each line
 * lies across two read() calls at some size. */
Test(os_maps, lines_split_across_reads)
{
    for (size_t size = 96; size <= sizeof sample + 8; size++) {
        int fd = pipe_of(sample, strlen(sample));
        char buf[sizeof sample + 8];
        mt_os_maps m;
        mt_os_maps_fd(&m, fd, buf, size);
        mt_os_mapping got;
        size_t n = 0;
        while (mt_os_maps_next(&m, &got) && n < NWANT) {
            expect_mapping(&got, &sample_want[n], n);
            n++;
        }
        cr_expect_eq(n, NWANT, "buffer of %zu bytes", size);
        close(fd);
    }
}

/* A path of 5000 bytes, longer than the 4096-byte buffer: the mapping
 * comes with the start of its path, truncated, and the next line whole. */
Test(os_maps, path_longer_than_the_buffer)
{
    size_t plen = 5000;
    char *text = malloc(plen + 512);
    int k = sprintf(text, "7f0000000000-7f0000001000 r--p 00001000 fd:01 99 /");
    memset(text + k, 'a', plen - 1);
    k += (int)plen - 1;
    k +=
        sprintf(text + k, " (deleted)\n7f0000002000-7f0000003000 rw-p 00000000 00:00 0  [stack]\n");
    char buf[4096];
    int fd = pipe_of(text, (size_t)k);
    mt_os_maps m;
    mt_os_maps_fd(&m, fd, buf, sizeof buf);
    mt_os_mapping got;
    cr_assert(mt_os_maps_next(&m, &got));
    cr_expect_eq(got.start, 0x7f0000000000);
    cr_expect_eq(got.end, 0x7f0000001000);
    cr_expect_eq(got.offset, 0x1000);
    cr_expect_eq(got.inode, 99);
    cr_expect(got.truncated);
    cr_expect(!got.deleted, "the end of the line was not seen");
    cr_expect_eq(got.path[0], '/');
    cr_expect_eq(got.path + got.path_len, buf + sizeof buf, "the path to the buffer's end");
    cr_assert(mt_os_maps_next(&m, &got), "the rest of the long line is skipped");
    cr_expect_eq(got.start, 0x7f0000002000);
    cr_expect_eq(got.path_len, 7);
    cr_expect(memcmp(got.path, "[stack]", 7) == 0);
    cr_expect(!got.truncated);
    cr_expect(!mt_os_maps_next(&m, &got));
    close(fd);

    /* With room for it: the whole path, " (deleted)" taken off. */
    size_t big = (size_t)k + 1;
    char *bigbuf = malloc(big);
    fd = pipe_of(text, (size_t)k);
    mt_os_maps_fd(&m, fd, bigbuf, big);
    cr_assert(mt_os_maps_next(&m, &got));
    cr_expect(!got.truncated);
    cr_expect(got.deleted);
    cr_expect_eq(got.path_len, plen);
    cr_expect_eq(got.path[plen - 1], 'a');
    cr_assert(mt_os_maps_next(&m, &got));
    cr_expect_eq(got.start, 0x7f0000002000);
    close(fd);
    free(bigbuf);
    free(text);
}

Test(os_maps, a_failed_read)
{
    char buf[256];
    mt_os_maps m;
    mt_os_maps_fd(&m, -1, buf, sizeof buf);
    mt_os_mapping got;
    cr_expect(!mt_os_maps_next(&m, &got));
    cr_expect(m.failed);
}

static int here_a_function(void)
{
    return 1;
}

/* This process's own: the mapping holding a stack variable is read-write,
 * the one holding a function executable and this program's file. */
Test(os_maps, the_process_itself)
{
    int fd = mt_os_maps_open_self();
    cr_assert_geq(fd, 0);
    char buf[4096], exe[4096];
    ssize_t elen = readlink("/proc/self/exe", exe, sizeof exe);
    cr_assert_gt(elen, 0);
    int local = here_a_function();
    mt_os_maps m;
    mt_os_maps_fd(&m, fd, buf, sizeof buf);
    mt_os_mapping got;
    bool stack = false, code = false;
    uintptr_t prev_end = 0;
    while (mt_os_maps_next(&m, &got)) {
        cr_expect_geq(got.start, prev_end, "ascending");
        prev_end = got.end;
        if ((uintptr_t)&local >= got.start && (uintptr_t)&local < got.end)
            stack = got.perms[0] == 'r' && got.perms[1] == 'w';
        if ((uintptr_t)here_a_function >= got.start && (uintptr_t)here_a_function < got.end)
            code = got.perms[2] == 'x' && got.inode != 0 && got.path_len == (size_t)elen &&
                   memcmp(got.path, exe, (size_t)elen) == 0;
    }
    close(fd);
    cr_expect(!m.failed);
    cr_expect(stack, "the stack's mapping");
    cr_expect(code, "the code's mapping, with this program's path");
}

struct tids {
    pid_t seen[64];
    size_t n;
};

static bool note_tid(pid_t tid, void *ctx)
{
    struct tids *t = ctx;
    if (t->n < 64)
        t->seen[t->n] = tid;
    t->n++;
    return true;
}

static void *idle_thread(void *arg)
{
    int *fd = arg;
    char c;
    (void)!read(fd[0], &c, 1);
    return NULL;
}

/* A process's threads by its pid (the symbolizer's search for a live
 * thread's maps) are this process's own: the same threads, the caller's
 * and a second one among them. */
Test(os_maps, threads_of_a_pid)
{
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, idle_thread, fd), 0);
    struct tids self = { .n = 0 }, by_pid = { .n = 0 };
    cr_assert(mt_os_each_task(note_tid, &self));
    cr_assert(mt_os_each_task_of(getpid(), note_tid, &by_pid));
    cr_expect_geq(self.n, 2);
    cr_expect_eq(self.n, by_pid.n);
    bool mine = false;
    for (size_t i = 0; i < by_pid.n && i < 64; i++) {
        cr_expect_eq(self.seen[i], by_pid.seen[i]);
        mine |= by_pid.seen[i] == gettid();
    }
    cr_expect(mine, "the calling thread is listed");
    cr_expect(!mt_os_each_task_of(999999999, note_tid, &by_pid), "no such process");
    (void)!write(fd[1], "x", 1);
    pthread_join(th, NULL);
}

/* Every mapping of TEXT, by a buffer of SIZE bytes, into W (N at most);
 * how many. */
static size_t mappings_of(const char *text, size_t size, mt_os_mapping *w, size_t n)
{
    char buf[512];
    cr_assert_leq(size, sizeof buf);
    int fd = pipe_of(text, strlen(text));
    mt_os_maps m;
    mt_os_maps_fd(&m, fd, buf, size);
    size_t k = 0;
    for (mt_os_mapping got; mt_os_maps_next(&m, &got);)
        if (k < n)
            w[k++] = got;
    cr_expect(!m.failed);
    close(fd);
    return k;
}

/* The last line cut short (a file read while it changed, a text cut by
 * hand): cut in its range, it is no mapping; cut after its permissions, a
 * mapping with no path; without its newline, whole. Through a buffer of
 * the whole text and one that splits it. */
Test(os_maps, a_cut_last_line)
{
    static const char head[] = "7f0000000000-7f0000001000 r-xp 00000000 fd:01 7  /lib/a.so\n";
    char text[256];
    mt_os_mapping got[4];
    for (size_t size = 96; size <= 256; size += 160) {
        snprintf(text, sizeof text, "%s7f0000002000-7f00", head);
        cr_expect_eq(mappings_of(text, size, got, 4), 1, "cut in its range (buffer %zu)", size);
        cr_expect_eq(got[0].path_len, 9);

        snprintf(text, sizeof text, "%s7f0000002000-7f0000003000 rw-", head);
        cr_assert_eq(mappings_of(text, size, got, 4), 2, "cut in its permissions (buffer %zu)",
                     size);
        cr_expect_eq(got[1].start, 0x7f0000002000);
        cr_expect_eq(got[1].end, 0x7f0000003000);
        cr_expect_str_eq(got[1].perms, "rw--");
        cr_expect_eq(got[1].inode, 0);
        cr_expect_eq(got[1].path_len, 0, "no path");
        cr_expect(!got[1].truncated && !got[1].deleted);

        snprintf(text, sizeof text,
                 "%s7f0000002000-7f0000003000 r--p 00001000 fd:01 8  /lib/b.so (deleted)", head);
        cr_assert_eq(mappings_of(text, size, got, 4), 2, "without its newline (buffer %zu)", size);
        cr_expect_eq(got[1].offset, 0x1000);
        cr_expect_eq(got[1].inode, 8);
        cr_expect_eq(got[1].path_len, 9);
        cr_expect(memcmp(got[1].path, "/lib/b.so", 9) == 0);
        cr_expect(got[1].deleted);
        cr_expect_eq(got[1].line_len, strlen(text) - strlen(head), "no newline in the line");
    }
}

/* The code's mapping in the maps open at FD: executable, of this program's
 * file. */
static bool maps_hold_this_code(int fd)
{
    char buf[4096], exe[4096];
    ssize_t elen = readlink("/proc/self/exe", exe, sizeof exe);
    cr_assert_gt(elen, 0);
    mt_os_maps m;
    mt_os_maps_fd(&m, fd, buf, sizeof buf);
    bool code = false;
    for (mt_os_mapping got; mt_os_maps_next(&m, &got);)
        if ((uintptr_t)here_a_function >= got.start && (uintptr_t)here_a_function < got.end)
            code = got.perms[2] == 'x' && got.path_len == (size_t)elen &&
                   memcmp(got.path, exe, (size_t)elen) == 0;
    return code;
}

static void *wait_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* Whether process PID's own maps file is empty (its main thread has
 * called pthread_exit). */
static bool maps_empty(pid_t pid)
{
    char path[64], c;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    int fd = open(path, O_RDONLY);
    bool empty = fd >= 0 && read(fd, &c, 1) == 0;
    if (fd >= 0)
        close(fd);
    return empty;
}

/* mt_os_maps_open: this process's (0), another's by its pid, and one whose
 * main thread has called pthread_exit, whose /proc/PID/maps is empty: read
 * through a live thread's. */
Test(os_maps, open_by_pid)
{
    int fd = mt_os_maps_open(0);
    cr_assert_geq(fd, 0);
    cr_expect(maps_hold_this_code(fd), "this process's, by 0");
    close(fd);
    fd = mt_os_maps_open(getpid());
    cr_assert_geq(fd, 0);
    cr_expect(maps_hold_this_code(fd), "this process's, by its pid");
    close(fd);

    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        pthread_t th;
        if (pthread_create(&th, NULL, wait_thread, NULL) != 0)
            _exit(1);
        pthread_exit(NULL);
    }
    for (int i = 0; i < 500 && !maps_empty(child); i++)
        usleep(10000);
    cr_expect(maps_empty(child), "the child's main thread has exited");
    fd = mt_os_maps_open(child);
    cr_expect_geq(fd, 0);
    cr_expect(fd >= 0 && maps_hold_this_code(fd), "a live thread's maps, not main's empty ones");
    if (fd >= 0)
        close(fd);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    cr_expect_eq(mt_os_maps_open(999999999), -1, "no such process");
}
