/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MEMTRACE_TAGS=PATH: the tag scopes' trees written to PATH.json and
 * PATH.dot at exit and with each report the profiler makes on request or
 * on its signal (PATH.N.json, PATH.N.dot for report N, unless PATH has
 * %n). PATH takes the expansions of every path setting (mt_path_expand);
 * a forked child or an exec'd program writes its own files, as for
 * MEMTRACE_PPROF. Files are created 0600 and never through a symbolic
 * link. The writer copies the nodes into memory it maps, so it takes no
 * lock and no heap; a node being made meanwhile is left out. */
#include "tags/tags_out.h"

#include "base/children_env.h"
#include "base/config.h"
#include "base/os.h"
#include "base/output.h"
#include "base/reentry.h"
#include "store/threads.h"
#include "tags/tags_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PATH_BYTES 4096

static char pattern[PATH_BYTES]; /* "" = no files */
static char program[256];
static pid_t start_pid;
static long written; /* %n: the sets of files this process wrote */

static void at_exit(void)
{
    mt_tags_out_write(0);
}

void mt_tags_out_start(void)
{
    if (!mt_setting_path(MT_SET_TAGS, pattern, sizeof pattern, "no tag scope files"))
        return;
    snprintf(program, sizeof program, "%s", program_invocation_short_name);
    start_pid = getpid();
    static char env[sizeof "MEMTRACE_TAGS=" + PATH_BYTES + 3];
    mt_children_pass_on("MEMTRACE_TAGS", pattern, env, sizeof env);
    if (!mt_tags_start()) {
        pattern[0] = '\0';
        return;
    }
    atexit(at_exit);
}

bool mt_tags_out_enabled(void)
{
    return pattern[0] != '\0';
}

static void emit_fd(void *ctx, const char *s, size_t len)
{
    mt_out_write(ctx, s, len);
}

static const char *thread_name(void *ctx, uint32_t number)
{
    (void)ctx;
    const char *name = mt_threads_name(number);
    return name ? name : "";
}

/* One file: BASE + SUFFIX. */
static void write_file(const char *base, const char *suffix, enum mt_tag_format f,
                       const mt_tag_view *v, uint32_t n, void *scratch)
{
    char path[PATH_BYTES + 16];
    snprintf(path, sizeof path, "%s%s", base, suffix);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        mt_warn("MEMTRACE_TAGS: %.1024s not written (%s)", path,
                errno == ELOOP ? "a symbolic link; not followed" : strerror(errno));
        return;
    }
    mt_out o;
    mt_out_init(&o, fd);
    mt_tag_write(f, v, n, scratch, emit_fd, thread_name, &o, (int)getpid());
    mt_out_flush(&o);
    if (close(fd) != 0)
        mt_warn("MEMTRACE_TAGS: %.1024s not written whole (%s)", path, strerror(errno));
}

static const char *own_name(void *ctx, uint32_t id)
{
    return ((const mt_tag_node *)ctx)[id].name;
}

static uint32_t own_parent(void *ctx, uint32_t id)
{
    return ((const mt_tag_node *)ctx)[id].parent;
}

void mt_tag_path(uint32_t id, char *buf, size_t size)
{
    uint32_t n;
    const mt_tag_node *t = mt_tag_table(&n);
    if (!t || id == 0) {
        if (size)
            buf[0] = '\0';
        return;
    }
    mt_tag_path_of(id, n, own_name, own_parent, (void *)t, buf, size);
}

void mt_tags_out_write(unsigned report)
{
    if (!pattern[0])
        return;
    int was = mt_enter();
    pid_t pid = getpid();
    char base[PATH_BYTES];
    bool numbered = strstr(pattern, "%n") != NULL;
    if (!mt_path_expand(pattern, program, written++, base, sizeof base)) {
        mt_warn("MEMTRACE_TAGS: %.1024s not written (the name it expands to is too long)", pattern);
        mt_leave(was);
        return;
    }
    char extra[48] = "";
    size_t len = 0;
    if (pid != start_pid && !strstr(pattern, "%p"))
        len = (size_t)snprintf(extra, sizeof extra, ".%d", (int)pid);
    if (report && !numbered)
        snprintf(extra + len, sizeof extra - len, ".%u", report);
    if (strlen(base) + strlen(extra) >= sizeof base) {
        mt_leave(was);
        return;
    }
    strcat(base, extra);

    uint32_t n;
    const mt_tag_node *nodes = mt_tag_table(&n);
    size_t bytes = (size_t)(n ? n : 1) * sizeof(mt_tag_view) + mt_tag_scratch_bytes(n);
    mt_tag_view *v = mt_os_map(bytes, "tag scopes' output");
    if (v) {
        for (uint32_t id = 1; id < n; id++)
            mt_tag_view_of(&nodes[id], &v[id]);
        void *scratch = v + (n ? n : 1);
        write_file(base, ".json", MT_TAG_JSON, v, n, scratch);
        write_file(base, ".dot", MT_TAG_DOT, v, n, scratch);
        munmap(v, bytes);
    }
    mt_leave(was);
}
