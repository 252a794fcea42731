/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace-export: a timeline (MEMTRACE_RECORD) as heaptrack's data file
 * or as the timeline JSON of `memtrace view`. The launcher runs it for
 * `memtrace export`.
 *   memtrace-export --heaptrack REC [-o OUT]   OUT: REC.heaptrack.gz; .gz or .zst
 *   memtrace-export --json REC [-o OUT]        OUT: REC.json; - for stdout
 * Exit status 0, 1 when REC cannot be read or OUT written, 2 for a usage
 * error. A sampled timeline (MEMTRACE_SAMPLE) holds only the sampled
 * blocks, its figures a fraction of the run's: it is said on one line, the
 * JSON carries its sample_rate, and the heaptrack export, whose format has
 * no room to say so, is refused (status 1) without --sampled-ok. A timeline cut short (kill -9, a
 * full disk) is exported as far as it goes, with one line saying so. */
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The output files are created 0600 (before the umask), as the library's
 * are (src/profile/output_file.c): they hold the program's command line,
 * functions and sources, the timeline's owner's business. The last
 * component of PATH is never followed if it is a symbolic link
 * (O_NOFOLLOW): a link planted at a predictable name (REC.json) in a shared
 * directory would otherwise make the export overwrite any file its user
 * can write. -1 with the one line said. */
int export_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        struct stat st;
        bool link = errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
        fprintf(stderr, "memtrace export: %s: cannot be written (%s)\n", path,
                link ? "a symbolic link; not followed" : strerror(errno));
    }
    return fd;
}

static void usage(void)
{
    fputs("usage: memtrace export --heaptrack|--json RECORDING [-o OUT] [--sampled-ok]\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *what = NULL, *rec = NULL, *out = NULL;
    bool sampled_ok = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--heaptrack") == 0 || strcmp(argv[i], "--json") == 0) {
            if (what)
                usage();
            what = argv[i] + 2;
        } else if (strcmp(argv[i], "--sampled-ok") == 0) {
            sampled_ok = true;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs("usage: memtrace export --heaptrack|--json RECORDING [-o OUT] [--sampled-ok]\n",
                  stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "memtrace export: unknown option '%s'\n", argv[i]);
            usage();
        } else if (!rec) {
            rec = argv[i];
        } else {
            usage();
        }
    }
    if (!what || !rec) {
        fprintf(stderr, "memtrace export: %s\n",
                !what ? "give --heaptrack or --json" : "no recording given");
        usage();
    }
    static char def[4200];
    if (!out) {
        snprintf(def, sizeof def, "%s.%s", rec,
                 strcmp(what, "json") == 0 ? "json" : "heaptrack.gz");
        out = def;
    }
    tl_file r;
    if (!tl_read(rec, &r))
        return 1;
    tl_symbolize(&r);
    if (r.truncated)
        fprintf(stderr, "memtrace export: %s is truncated (%s): the run up to %.3f s\n", rec, r.why,
                (double)r.duration_ns / 1e9);
    if (r.sample_rate && strcmp(what, "heaptrack") == 0 && !sampled_ok) {
        fprintf(stderr,
                "memtrace export: %s is a sampled recording (one allocation in %" PRIu64
                " bytes) and heaptrack would show its figures as the run's; give --sampled-ok to "
                "export it anyway\n",
                rec, r.sample_rate);
        return 1;
    }
    if (r.sample_rate)
        fprintf(stderr,
                "memtrace export: %s is sampled: one allocation in %" PRIu64 " bytes; its "
                "figures are of the sampled blocks only\n",
                rec, r.sample_rate);
    bool ok;
    if (strcmp(what, "json") == 0) {
        tl_timeline t;
        tl_replay(&r, &t, 2000);
        FILE *f = stdout;
        if (strcmp(out, "-") != 0) {
            int fd = export_open(out);
            if (fd < 0)
                return 1;
            if (!(f = fdopen(fd, "w")))
                die_oom();
        }
        ok = export_json(&r, &t, f);
        ok = (f == stdout ? fflush(f) == 0 : fclose(f) == 0) && ok;
        if (!ok)
            fprintf(stderr, "memtrace export: %s: a write failed\n", out);
    } else {
        tl_sort(&r);
        ok = export_heaptrack(&r, out);
        if (ok)
            fprintf(stderr, "memtrace export: %s (open it with: heaptrack_gui %s)\n", out, out);
    }
    return ok ? 0 : 1;
}
