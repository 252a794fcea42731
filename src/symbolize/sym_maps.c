/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc/PID/maps for libdwfl: which file to read (a live thread's once main
 * has called pthread_exit), reading it (sym_read_maps: the one place the
 * symbolizer reads a maps file), dropping the private file copies that are
 * not loaded code, reporting the rest as modules, and a hash that tells
 * whether the file mappings changed. */
#include "symbolize/sym_internal.h"

#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


/* Whether M is a file mapped privately, writable, from offset 0: not a
 * loaded object (whose first segment, holding the ELF header, is never
 * writable) but a file libelf reads (ELF_C_READ_MMAP maps it so; in the
 * traced process, memtrace's own symbolizer does) or another private copy
 * of a file. libdwfl would report such a mapping of a program or library
 * as a second module of it, whose range (from the file's segments) can
 * cover addresses of libraries loaded or unloaded nearby. */
static bool private_file_copy(const mt_os_mapping *m)
{
    return m->path_len && m->path[0] == '/' && m->offset == 0 && m->perms[1] == 'w' &&
           m->perms[3] == 'p';
}

size_t mt_sym_filter_maps(char *maps, size_t len)
{
    /* The kept lines move down over ones already parsed, never ahead of
     * the parser. */
    mt_os_maps it;
    mt_os_maps_text(&it, maps, len);
    size_t out = 0;
    for (mt_os_mapping m; mt_os_maps_next(&it, &m);) {
        if (!private_file_copy(&m)) {
            memmove(maps + out, m.line, m.line_len);
            out += m.line_len;
        }
    }
    return out;
}

/* The file PATH (a maps file), whole, into a new buffer; NULL if it cannot
 * be read. */
static char *read_text(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (ssize_t r = 1; buf && r > 0;) {
        if (n == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            r = 1;
        else if (r < 0) {
            free(buf);
            buf = NULL;
        } else {
            n += (size_t)r;
        }
    }
    close(fd);
    *len = n;
    return buf;
}

static bool has_text(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char c;
    bool some = fd >= 0 && read(fd, &c, 1) == 1;
    if (fd >= 0)
        close(fd);
    return some;
}

struct live_task {
    pid_t pid;
    char *path;
    size_t size;
    bool found;
};

static bool try_task(pid_t tid, void *ctx)
{
    struct live_task *t = ctx;
    if (tid == t->pid)
        return true;
    snprintf(t->path, t->size, "/proc/%d/task/%d/maps", (int)t->pid, (int)tid);
    t->found = has_text(t->path);
    return !t->found;
}

bool mt_sym_maps_path(pid_t pid, char *path, size_t size)
{
    snprintf(path, size, "/proc/%d/maps", (int)pid);
    if (has_text(path))
        return true;
    struct live_task t = { pid, path, size, false };
    mt_os_each_task_of(pid, try_task, &t);
    if (!t.found)
        snprintf(path, size, "/proc/%d/maps", (int)pid);
    return t.found;
}

/* The maps of process PID (0: this one), filtered, into a new buffer; NULL
 * if they cannot be read. Once main has called pthread_exit, /proc/PID is
 * a zombie's and its maps are empty: this process's are read through the
 * calling thread (/proc/thread-self), another's through one of its live
 * threads (mt_sym_maps_path). */
char *sym_read_maps(pid_t pid, size_t *len)
{
    char path[96];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/thread-self/maps");
    else
        mt_sym_maps_path(pid, path, sizeof path);
    char *buf = read_text(path, len);
    if (!buf && pid == 0)
        buf = read_text("/proc/self/maps", len); /* Linux before 3.17 */
    if (buf)
        *len = mt_sym_filter_maps(buf, *len);
    return buf;
}

/* Reports the modules of MAPS (LEN bytes of filtered maps of PID, 0 for
 * this process; NULL: let libdwfl read the file itself). libdwfl's error
 * code, 0 on success. */
int sym_report_maps(Dwfl *dwfl, char *maps, size_t len, int pid)
{
    FILE *f = maps && len ? fmemopen(maps, len, "r") : NULL;
    /* For this process, the calling thread's id (see sym_read_maps). */
    int rc = f ? dwfl_linux_proc_maps_report(dwfl, f)
               : dwfl_linux_proc_report(dwfl, pid ? pid : (int)syscall(SYS_gettid));
    if (f)
        fclose(f);
    return rc;
}

bool mt_sym_report_process(Dwfl *dwfl, int pid, int *err)
{
    size_t len = 0;
    char *maps = sym_read_maps(pid, &len);
    int rc = sym_report_maps(dwfl, maps, len, pid);
    free(maps);
    if (err)
        *err = rc;
    return rc == 0;
}

/* A hash of the file mappings in MAPS (the lines with a path): the modules
 * are as they were when it is unchanged, whatever anonymous memory came or
 * went. */
uint64_t sym_modules_hash(const char *maps, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    mt_os_maps it;
    mt_os_maps_text(&it, maps, len);
    for (mt_os_mapping m; mt_os_maps_next(&it, &m);)
        if (m.path_len && m.path[0] == '/')
            for (size_t i = 0; i < m.line_len; i++)
                h = (h ^ (unsigned char)m.line[i]) * 0x100000001b3ull;
    return h;
}
