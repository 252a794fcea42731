/* /proc/PID/maps for libdwfl: which file to read (a live thread's once main
 * has called pthread_exit), reading it (sym_read_maps: the one place the
 * symbolizer reads a maps file), dropping the private file copies that are
 * not loaded code, reporting the rest as modules, and a hash that tells
 * whether the file mappings changed. */
#include "symbolize/sym_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


/* Whether a line of /proc/PID/maps is a file mapped privately, writable,
 * from offset 0: not a loaded object (whose first segment, holding the ELF
 * header, is never writable) but a file libelf reads (ELF_C_READ_MMAP maps
 * it so; in the traced process, memtrace's own symbolizer does) or another
 * private copy of a file. libdwfl would report such a mapping of a program
 * or library as a second module of it, whose range (from the file's
 * segments) can cover addresses of libraries loaded or unloaded nearby. */
static bool private_file_copy(const char *line, size_t len)
{
    char perms[5];
    unsigned long long offset;
    int name_at = 0;
    if (sscanf(line, "%*x-%*x %4s %llx %*s %*s %n", perms, &offset, &name_at) != 2 ||
        name_at == 0 || (size_t)name_at >= len || line[name_at] != '/')
        return false;
    return offset == 0 && perms[1] == 'w' && perms[3] == 'p';
}

/* The length of the line of MAPS (LEN bytes) starting at AT, its newline
 * included. */
static size_t line_at(const char *maps, size_t len, size_t at)
{
    const char *nl = memchr(maps + at, '\n', len - at);
    return nl ? (size_t)(nl - (maps + at)) + 1 : len - at;
}

size_t mt_sym_filter_maps(char *maps, size_t len)
{
    size_t out = 0;
    for (size_t at = 0; at < len;) {
        size_t line = line_at(maps, len, at);
        if (!private_file_copy(maps + at, line)) {
            memmove(maps + out, maps + at, line);
            out += line;
        }
        at += line;
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

bool mt_sym_maps_path(pid_t pid, char *path, size_t size)
{
    snprintf(path, size, "/proc/%d/maps", (int)pid);
    if (has_text(path))
        return true;
    char dir_path[48];
    snprintf(dir_path, sizeof dir_path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(dir_path);
    bool found = false;
    for (struct dirent *d; dir && !found && (d = readdir(dir));) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9' || atoi(d->d_name) == pid)
            continue;
        snprintf(path, size, "/proc/%d/task/%.20s/maps", (int)pid, d->d_name);
        found = has_text(path);
    }
    if (dir)
        closedir(dir);
    if (!found)
        snprintf(path, size, "/proc/%d/maps", (int)pid);
    return found;
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
    for (size_t at = 0; at < len;) {
        size_t line = line_at(maps, len, at);
        if (memchr(maps + at, '/', line))
            for (size_t i = 0; i < line; i++)
                h = (h ^ (unsigned char)maps[at + i]) * 0x100000001b3ull;
        at += line;
    }
    return h;
}
