/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the profiler's reports go: the MEMTRACE_OUTPUT file, else
 * memtrace's stderr; and how its files are opened. */
#include "profile/prof_internal.h"
#include "profile/profiler.h"

#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

bool mt_prof_expand(const char *pattern, char *out, size_t size)
{
    return mt_path_expand(pattern, mt_prof_set.program, -1, out, size);
}

/* The report file of this process, expanded once per process (a forked
 * child expands it again: its own %p). Opened for each report and closed
 * after, so a program that closes or reuses descriptors never gets our text
 * in its files. Always appended to, never truncated: the processes of one
 * run that share the name (forked or exec'd children, which cannot know
 * whether an ancestor wrote there before them) all keep their reports. */
static char out_path[MT_PROF_PATH_BYTES];
static pid_t out_pid;

/* Report and folded files are created 0600 (before the umask): they show
 * the program's functions, sources and allocation patterns, which are the
 * owner's business, as in a core file. The last component of the path is
 * never followed if it is a symbolic link (O_NOFOLLOW): a link planted at a
 * predictable name in a shared directory would otherwise make the program
 * overwrite any file its user can write. */
int mt_prof_open_file(const char *path, int flags)
{
    return open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
}

bool mt_prof_is_link(const char *path)
{
    struct stat st;
    return errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Takes the MEMTRACE_OUTPUT file FD for one report, whole: the processes
 * that share the file (forked and exec'd children) append their reports
 * in buffer-sized writes, which would otherwise interleave mid-line. An
 * advisory lock (flock) on the open file, released when it is closed;
 * only on a regular file (not /dev/null, a FIFO or a terminal). A file
 * that cannot be locked is written unlocked. */
static void lock_output(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

/* The descriptor for a report: the MEMTRACE_OUTPUT file, else memtrace's
 * copy of the start-up stderr (mt_err_fd, -1: the report is dropped rather
 * than written into a file the program opened as fd 2). */
static int open_output(bool *own)
{
    *own = false;
    if (!mt_prof_set.output)
        return mt_err_fd();
    pid_t pid = getpid();
    if (out_pid != pid) {
        if (!mt_prof_expand(mt_prof_set.output, out_path, sizeof out_path)) {
            mt_warn("MEMTRACE_OUTPUT: the path expands to more than %d bytes; reporting on "
                    "stderr",
                    MT_PROF_PATH_BYTES - 1);
            mt_prof_set.output = NULL;
            return mt_err_fd();
        }
        out_pid = pid;
    }
    int fd = mt_prof_open_file(out_path, O_WRONLY | O_CREAT | O_APPEND);
    if (fd < 0) {
        if (mt_prof_is_link(out_path))
            mt_warn("MEMTRACE_OUTPUT: %s is a symbolic link; not following it; reporting on "
                    "stderr",
                    out_path);
        else
            mt_warn("MEMTRACE_OUTPUT: cannot open %s (%s); reporting on stderr", out_path,
                    strerror(errno));
        mt_prof_set.output = NULL;
        return mt_err_fd();
    }
    lock_output(fd);
    *own = true;
    return fd;
}

void mt_profiler_output_open(mt_out *o, bool *own)
{
    mt_out_init(o, open_output(own));
    if (*own)
        mt_out_fall_back(o, "MEMTRACE_OUTPUT", out_path);
}

/* A report that could not be written to the MEMTRACE_OUTPUT file went on
 * on stderr (mt_out_fall_back, which said so once); later ones go there
 * directly, as after a failed open. */
void mt_profiler_output_close(mt_out *o, bool own)
{
    mt_out_flush(o);
    if (!own)
        return;
    if (close(o->file) != 0 && !o->fell_back)
        mt_warn("MEMTRACE_OUTPUT: cannot write to %s (%s); the report there may be incomplete",
                out_path, strerror(errno));
    if (o->fell_back)
        mt_prof_set.output = NULL;
}
