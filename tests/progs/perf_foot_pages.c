/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_foot_pages: what a sampled run keeps resident of read-only file
 * mappings (tests/e2e/perf_foot_pages.sh). Prints, for each mapping whose
 * file name starts with one of the names given, "NAME PERMS RSS_KB", at main's
 * start ("start") and after a churn of small blocks ("churn": a ring of
 * 4096 blocks of 16 to 528 bytes, 400000 steps, a fixed PRNG), each line
 * prefixed by the phase (between the two, a SIGINT handler is set with
 * signal(), as a program's main may); then "page OFFSET" (hex) for each
 * page of the first name's executable mapping that is mapped
 * (/proc/self/pagemap), by its offset in the file; then "data VADDR"
 * (hex, from the load base) for each mapped page of its writable data:
 * its rw-p file mapping and the anonymous mapping right after it (.bss
 * past the file).
 *
 *   perf_foot_pages NAME...
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void show(const char *phase, int n, char **names)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) {
        perror("smaps");
        exit(1);
    }
    char line[512], perms[8] = "", path[256] = "";
    int which = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char p[8];
        int off = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, p, &off) == 3 && off > 0) {
            strcpy(perms, p);
            snprintf(path, sizeof path, "%s", line + off);
            path[strcspn(path, "\n")] = 0;
            which = -1;
            for (int i = 0; i < n; i++) {
                const char *base = strrchr(path, '/');
                if (base && strncmp(base + 1, names[i], strlen(names[i])) == 0)
                    which = i;
            }
            continue;
        }
        unsigned long kb;
        if (which >= 0 && sscanf(line, "Rss: %lu kB", &kb) == 1)
            printf("%s %s %s %lu\n", phase, names[which], perms, kb);
    }
    fclose(f);
}

/* /proc/self/maps, and /proc/self/pagemap open in *PM; exits if either
 * cannot be opened. */
static FILE *open_maps(int *pm)
{
    FILE *f = fopen("/proc/self/maps", "r");
    *pm = open("/proc/self/pagemap", O_RDONLY);
    if (!f || *pm < 0) {
        perror("maps");
        exit(1);
    }
    return f;
}

/* The mapped pages of the first executable mapping of NAME. */
static void pages(const char *name)
{
    int pm;
    FILE *f = open_maps(&pm);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        char perms[8];
        int at = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &at) != 4 || !at ||
            strcmp(perms, "r-xp") != 0)
            continue;
        line[strcspn(line, "\n")] = 0;
        const char *base = strrchr(line + at, '/');
        if (!base || strncmp(base + 1, name, strlen(name)) != 0)
            continue;
        for (unsigned long a = lo; a < hi; a += 4096) {
            uint64_t e = 0;
            if (pread(pm, &e, sizeof e, (off_t)(a / 4096 * 8)) == sizeof e && (e >> 63))
                printf("page %lx\n", off + (a - lo));
        }
        break;
    }
    fclose(f);
    close(pm);
}

/* The mapped pages of NAME's writable data, by address from its load base
 * (the start of its mapping of file offset 0). */
static void data_pages(const char *name)
{
    int pm;
    FILE *f = open_maps(&pm);
    char line[512];
    unsigned long base = 0, rw_end = 0;
    int have_base = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        char perms[8];
        int at = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &at) != 4 || !at)
            continue;
        line[strcspn(line, "\n")] = 0;
        const char *base_name = strrchr(line + at, '/');
        int ours = base_name && strncmp(base_name + 1, name, strlen(name)) == 0;
        int bss = !ours && line[at] == 0 && rw_end && lo == rw_end;
        if (ours && !have_base && off == 0) {
            base = lo;
            have_base = 1;
        }
        if (!have_base || !((ours && strcmp(perms, "rw-p") == 0) || bss))
            continue;
        rw_end = bss ? 0 : hi;
        for (unsigned long a = lo; a < hi; a += 4096) {
            uint64_t e = 0;
            if (pread(pm, &e, sizeof e, (off_t)(a / 4096 * 8)) == sizeof e && (e >> 63))
                printf("data %lx\n", a - base);
        }
    }
    fclose(f);
    close(pm);
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void on_signal(int sig)
{
    (void)sig;
}

int main(int argc, char **argv)
{
    show("start", argc - 1, argv + 1);
    /* What a program's main does once (sqlite3's shell): the interposed
     * signal runs after start-up. */
    signal(SIGINT, on_signal);
    enum { LIVE = 4096 };
    static char *slot[LIVE];
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (long i = 0; i < 400000; i++) {
        uint64_t r = next_random(&rng);
        long k = (long)(r % LIVE);
        free(slot[k]);
        slot[k] = malloc(16 + (r >> 32) % 513);
        if (!slot[k])
            return 1;
        slot[k][0] = (char)r;
    }
    for (long k = 0; k < LIVE; k++)
        free(slot[k]);
    show("churn", argc - 1, argv + 1);
    if (argc > 1) {
        pages(argv[1]);
        data_pages(argv[1]);
    }
    return 0;
}
