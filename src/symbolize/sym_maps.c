/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc/PID/maps for libdwfl: reading it (sym_read_maps: the one place the
 * symbolizer reads a maps file, which base/os.c's mt_os_maps_open finds
 * and its parser reads), dropping the private file copies that are
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

/* The maps file open at FD (mt_os_maps_open: which file), whole, into a
 * new buffer; NULL if it cannot be read. Closes FD. */
static char *read_text(int fd, size_t *len)
{
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

/* The maps of process PID (0: this one), filtered, into a new buffer; NULL
 * if they cannot be read. */
char *sym_read_maps(pid_t pid, size_t *len)
{
    char *buf = read_text(mt_os_maps_open(pid), len);
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
