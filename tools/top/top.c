/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace top [--interval SECONDS] [--by live|allocs|temporary|growth]
 *              [--batch] [-n COUNT] PID
 *
 * A live view of process PID, traced by memtrace (preloaded or attached),
 * that never stops it: its tables read out of process (view.c), every
 * SECONDS (default 1), on an ncurses screen (screen.c; until q, or COUNT
 * refreshes) or, with --batch, as COUNT refreshes of plain text (default
 * 1), the first at once.
 *
 * Exit status: 0; 1 when the process cannot be watched (none, not traced,
 * another user's, exited), with one "memtrace: top: ..." line on standard
 * error; 2 on a usage error. */
#include "top.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH_SITES 20 /* sites a batch refresh lists */

const char top_columns[] = "      bytes     blocks   allocs/s  temporary/s       growth  site";

static void usage(const char *what)
{
    if (what)
        fprintf(stderr, "memtrace: top: %s\n", what);
    fprintf(stderr, "usage: memtrace top [--interval SECONDS] [--by live|allocs|temporary|growth] "
                    "[--batch] [-n COUNT] PID\n");
    exit(2);
}

/* The interval's length in seconds, 0 before the second refresh. */
static double interval_of(const struct top_view *v)
{
    return v->refreshes > 1 ? v->when - v->prev_when : 0;
}

static void rate(const struct top_view *v, uint64_t n, char *buf, size_t size)
{
    double dt = interval_of(v);
    if (dt <= 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.0f", floor((double)n / dt + 0.5));
}

static void signed_bytes(int64_t d, char *buf, size_t size)
{
    snprintf(buf, size, "%+" PRId64, d);
}

void top_totals(const struct top_view *v, char *buf, size_t size)
{
    char r[32], last[32], start[32];
    /* The count is read while threads take batches of numbers: it may
     * read one batch's worth off, never a rate below 0. */
    rate(v, v->allocations > v->prev_allocations ? v->allocations - v->prev_allocations : 0, r,
         sizeof r);
    if (v->refreshes > 1)
        signed_bytes((int64_t)(v->bytes - v->prev_bytes), last, sizeof last);
    else
        snprintf(last, sizeof last, "-");
    signed_bytes((int64_t)(v->bytes - v->start_bytes), start, sizeof start);
    snprintf(buf, size,
             "live: %" PRIu64 " bytes in %" PRIu64 " blocks; allocations: %s a "
             "second; growth: %s bytes since the last refresh, %s since the start",
             v->bytes, v->blocks, r, last, start);
}

void top_notes(const struct top_view *v, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    if (v->sampled)
        at += snprintf(buf + at, size - at,
                       "sampled (MEMTRACE_SAMPLE=%" PRIu64 "): bytes and blocks are estimates. ",
                       v->t.d.sample_rate);
    if (v->changing && at < size)
        at += snprintf(buf + at, size - at,
                       "%u %s changed under each read: the blocks "
                       "in flux left out. ",
                       v->changing, v->changing == 1 ? "shard" : "shards");
    if (v->ring_overran && at < size)
        at += snprintf(buf + at, size - at,
                       "more frees than the freed history holds "
                       "(MEMTRACE_FREED): allocations and temporaries counted low. ");
    if (at && at < size && buf[at - 1] == ' ')
        buf[at - 1] = '\0';
}

void top_site_line(struct top_view *v, struct top_site *s, char *buf, size_t size)
{
    char a[32], tmp[32], g[32];
    rate(v, s->allocs, a, sizeof a);
    rate(v, s->temps, tmp, sizeof tmp);
    signed_bytes(top_growth(s), g, sizeof g);
    snprintf(buf, size, "%11" PRIu64 " %10" PRIu64 " %10s %12s %12s  %s", s->bytes, s->blocks, a,
             tmp, g, top_label(v, s));
}

static void sleep_until(double when)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double left = when - ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
    if (left <= 0)
        return;
    ts.tv_sec = (time_t)left;
    ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

static int batch(struct top_view *v, double interval, enum top_order order, unsigned long count)
{
    char why[512], line[1024];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    for (unsigned long i = 1; i <= count; i++) {
        if (i > 1)
            sleep_until(start + (double)(i - 1) * interval);
        int r = top_refresh(v, why, sizeof why);
        if (r < 0) {
            fflush(stdout);
            fprintf(stderr, "%s\n", why);
            return 1;
        }
        printf("memtrace top: process %d (%s), refresh %lu of %lu, every %g s, by %s\n", v->pid,
               v->comm, i, count, interval, top_order_names[order]);
        if (r == 0) {
            printf("memtrace top: refresh skipped: %s\n\n", why);
            fflush(stdout);
            continue;
        }
        top_totals(v, line, sizeof line);
        puts(line);
        top_notes(v, line, sizeof line);
        if (line[0])
            puts(line);
        puts(top_columns);
        struct top_site **s;
        size_t n = top_sorted(v, order, &s);
        for (size_t k = 0; k < n && k < BATCH_SITES; k++) {
            top_site_line(v, s[k], line, sizeof line);
            puts(line);
        }
        if (n > BATCH_SITES)
            printf("(%zu more sites)\n", n - BATCH_SITES);
        free(s);
        putchar('\n');
        fflush(stdout);
    }
    return 0;
}

static enum top_order parse_order(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, top_order_names[i]) == 0)
            return (enum top_order)i;
    usage("--by takes live, allocs, temporary or growth");
    return BY_LIVE;
}

static long parse_pid(const char *s)
{
    char *end;
    long pid = strtol(s, &end, 10);
    if (!*s || *end || pid <= 0 || pid > 0x3fffffff) {
        char what[128];
        snprintf(what, sizeof what, "'%.64s' is not a process id", s);
        usage(what);
    }
    return pid;
}

int main(int argc, char **argv)
{
    double interval = 1;
    enum top_order order = BY_LIVE;
    bool batch_mode = false;
    unsigned long count = 0; /* 0: not given */
    const char *pid_arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--interval") == 0 || strcmp(a, "-d") == 0) && i + 1 < argc) {
            char *end;
            interval = strtod(argv[++i], &end);
            if (*end || !(interval >= 0.01 && interval <= 86400))
                usage("--interval takes seconds, from 0.01 to 86400");
        } else if (strcmp(a, "--by") == 0 && i + 1 < argc) {
            order = parse_order(argv[++i]);
        } else if (strncmp(a, "--by=", 5) == 0) {
            order = parse_order(a + 5);
        } else if (strcmp(a, "--batch") == 0 || strcmp(a, "-b") == 0) {
            batch_mode = true;
        } else if (strcmp(a, "-n") == 0 && i + 1 < argc) {
            char *end;
            count = strtoul(argv[++i], &end, 10);
            if (*end || !argv[i][0] || count == 0 || argv[i][0] == '-')
                usage("-n takes a count of refreshes, 1 or more");
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: memtrace top [--interval SECONDS] [--by live|allocs|temporary|growth] "
                   "[--batch] [-n COUNT] PID\n");
            return 0;
        } else if (a[0] == '-' || pid_arg) {
            fprintf(stderr, "memtrace: top: unknown argument '%s'\n", a);
            usage(NULL);
        } else {
            pid_arg = a;
        }
    }
    if (!pid_arg)
        usage("which process? PID is missing");
    long pid = parse_pid(pid_arg);
    static struct top_view v;
    char why[512];
    if (!top_open(&v, (int)pid, why, sizeof why)) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    if (!batch_mode && (!isatty(0) || !isatty(1))) {
        fprintf(stderr, "memtrace: top: not a terminal: use --batch for text\n");
        return 2;
    }
    return batch_mode ? batch(&v, interval, order, count ? count : 1)
                      : top_screen(&v, interval, order, count);
}
