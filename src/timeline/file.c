/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The timeline's file (file.h): its name, its descriptor and the checks
 * that keep the records out of the program's own files. The descriptor
 * sits high above the program's (move_high) and is checked to be that
 * file before every write (mt_tl_file_fd): a daemon that closes every
 * descriptor and opens its own files never gets the timeline written
 * into them. A file there from this process before it executed a program
 * is kept (earlier_image). Used under the drain lock, or before the
 * writer starts and after it ends. */
#include "timeline/file.h"

#include "base/config.h"
#include "base/output.h"
#include "timeline/record_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

static struct {
    char path[MT_TL_PATH_BYTES]; /* expanded */
    int fd;                      /* -1, or the file of dev and ino (mt_tl_file_fd) */
    dev_t dev;
    ino_t ino;
} F = { .fd = -1 };

/* Whether FD is the timeline's file. */
static bool is_file(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == F.dev && st.st_ino == F.ino;
}

/* Descriptors below this distance from the top the program can open (the
 * RLIMIT_NOFILE soft limit, taken as at most 1024) are left to the program. */
#define FD_BELOW_TOP 16

/* FD moved to a number high above the program's own (which the kernel
 * hands out from the lowest free one up): a program that closes a range of
 * descriptors and opens its files does not get this number back for one
 * of them. Not above 1024: the kernel would grow the process's table of
 * descriptors to the limit's size (a million in many containers). FD
 * itself when there is none free up there. */
static int move_high(int fd)
{
    struct rlimit rl;
    rlim_t top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
        top = rl.rlim_cur;
    if (top <= FD_BELOW_TOP + 3 || fd >= (int)(top - FD_BELOW_TOP))
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - FD_BELOW_TOP));
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

int mt_tl_file_fd(uint64_t offset)
{
    if (is_file(F.fd))
        return F.fd;
    if (F.fd < 0)
        return -1;
    /* The program closed the number (it may hold a file of its own there
     * now, which stays untouched): the same file again, at the end of what
     * was written, or nothing. */
    F.fd = -1;
    int fd = open(F.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && (!is_file(fd) || lseek(fd, (off_t)offset, SEEK_SET) != (off_t)offset)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        mt_warn("MEMTRACE_RECORD: the program closed the recording's descriptor and %.1024s is "
                "no longer the file it was; recording stopped, the file holds what came before",
                F.path);
        return -1;
    }
    F.fd = move_high(fd);
    return F.fd;
}

/* When this process started, in ns since the epoch; 0 if unknown. Its
 * start time in /proc/self/stat is in clock ticks since boot
 * (CLOCK_BOOTTIME), rounded down. */
static uint64_t process_start_unix_ns(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* after the command's name, which may hold anything */
    for (int field = 2; p && field < 22; field++) /* to field 22, starttime */
        p = strchr(p + 1, ' ');
    long tick = sysconf(_SC_CLK_TCK);
    if (!p || tick <= 0)
        return 0;
    unsigned long long ticks = strtoull(p + 1, NULL, 10);
    struct timespec real, boot;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    uint64_t real_ns = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
    uint64_t boot_ns = (uint64_t)boot.tv_sec * 1000000000ull + (uint64_t)boot.tv_nsec;
    uint64_t since_ns = ticks * (1000000000ull / (uint64_t)tick);
    return since_ns > boot_ns ? 0 : real_ns - (boot_ns - since_ns);
}

#define HEAD_BYTES 8192 /* a head block at most (its command line is cut at 4096) */

/* earlier_image's answer, with FILE (FILE_SIZE bytes) and RAW
 * (HEAD_BYTES) to read the head into. */
static bool earlier_head(const char *path, uint8_t *file, size_t file_size, uint8_t *raw)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    ssize_t n = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = read(fd, file, file_size);
    if (fd >= 0)
        close(fd);
    if (n < MT_REC_MAGIC_LEN + MT_REC_HEADER_LEN ||
        memcmp(file, MT_REC_MAGIC, MT_REC_MAGIC_LEN) != 0)
        return false;
    uint32_t h[3];
    memcpy(h, file + MT_REC_MAGIC_LEN, sizeof h);
    const uint8_t *block = file + MT_REC_MAGIC_LEN + MT_REC_HEADER_LEN;
    size_t have = (size_t)n - MT_REC_MAGIC_LEN - MT_REC_HEADER_LEN;
    if (h[2] != MT_REC_BLOCK_TAG || h[0] > have || h[1] > HEAD_BYTES)
        return false;
    size_t len = h[1];
    if (h[0] == h[1]) {
        memcpy(raw, block, len);
    } else {
        size_t got = ZSTD_decompress(raw, HEAD_BYTES, block, h[0]);
        if (ZSTD_isError(got) || got != len)
            return false;
    }
    const uint8_t *p = raw + 1, *end = raw + len;
    uint64_t version, pid, start;
    if (len == 0 || raw[0] != MT_REC_HEAD || !mt_rec_get_u(&p, end, &version) ||
        !mt_rec_get_u(&p, end, &pid) || !mt_rec_get_u(&p, end, &start))
        return false;
    uint64_t born = process_start_unix_ns();
    return pid == (uint64_t)getpid() && born && start >= born;
}

/* Whether the file at PATH is a timeline this process made before it
 * executed a program (itself, most often: a server that re-executes
 * itself to upgrade), whose name it expands to again: its head (the first
 * block, which mt_tl_start writes alone) names this pid and a start after
 * this process's. A timeline of an earlier process that had the same pid
 * (the first process of every container) started before this one. */
static bool earlier_image(const char *path)
{
    /* Mapped for the check, not static: it is rare, and a program that
     * fills its address space should not lose the room to memtrace. */
    size_t file_size = MT_REC_MAGIC_LEN + MT_REC_HEADER_LEN + HEAD_BYTES;
    size_t size = file_size + HEAD_BYTES;
    uint8_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return false;
    bool earlier = earlier_head(path, buf, file_size, buf + file_size);
    munmap(buf, size);
    return earlier;
}

/* Opens F.path for the timeline, O_NOFOLLOW; -1 and errno when it
 * cannot. A timeline there of this process before its exec is kept: the
 * first of PATH.1 to PATH.99 that does not exist is written instead (said
 * once; F.path is that name). */
static int open_timeline(void)
{
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(F.path, flags | O_EXCL, 0600);
    if (fd >= 0 || errno != EEXIST)
        return fd;
    if (!earlier_image(F.path))
        return open(F.path, flags | O_TRUNC, 0600);
    char alt[MT_TL_PATH_BYTES];
    for (int k = 1; k < 100; k++) {
        if (snprintf(alt, sizeof alt, "%s.%d", F.path, k) >= (int)sizeof alt) {
            errno = ENAMETOOLONG;
            return -1;
        }
        fd = open(alt, flags | O_EXCL, 0600);
        if (fd >= 0) {
            mt_warn("MEMTRACE_RECORD: %.1024s holds this process's recording from before it "
                    "executed %s; recording to %.1024s",
                    F.path, program_invocation_short_name, alt);
            memcpy(F.path, alt, sizeof alt);
            return fd;
        }
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

const char *mt_tl_file_open(const char *pattern)
{
    if (!mt_path_expand(pattern, program_invocation_short_name, 0, F.path, sizeof F.path)) {
        snprintf(F.path, sizeof F.path, "%s", pattern);
        return "the name it expands to is too long";
    }
    if ((F.fd = open_timeline()) < 0) {
        struct stat st;
        return errno == ELOOP && lstat(F.path, &st) == 0 && S_ISLNK(st.st_mode)
                   ? "a symbolic link; not followed"
                   : strerror(errno);
    }
    struct stat st;
    F.fd = move_high(F.fd);
    if (fstat(F.fd, &st) == 0) {
        F.dev = st.st_dev;
        F.ino = st.st_ino;
    }
    return NULL;
}

const char *mt_tl_file_path(void)
{
    return F.path;
}

void mt_tl_file_discard(void)
{
    if (F.fd >= 0)
        close(F.fd);
    F.fd = -1;
}

int mt_tl_file_close(void)
{
    int err = 0;
    if (is_file(F.fd) && close(F.fd) != 0) /* else the number is the program's */
        err = errno;
    F.fd = -1;
    return err;
}
