/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libraries a traced process has mapped while it runs, for
 * tests/e2e/perf_foot_lazy.sh: after a few thousand blocks allocated and
 * freed (and 64 KiB left live, so that there is something to report), one
 * line "map NAME" for each of libdw, libelf, libunwind, libz and libzstd
 * in /proc/self/maps (NAME without its version), then "done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = { "libdw", "libelf", "libunwind", "libz", "libzstd" };

int main(void)
{
    static void *keep[16];
    for (int i = 0; i < 5000; i++)
        free(malloc((size_t)(i % 500) + 1));
    for (int i = 0; i < 16; i++)
        keep[i] = malloc(4096);
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 2;
    char line[4096];
    unsigned seen = 0;
    while (fgets(line, sizeof line, f)) {
        const char *base = strrchr(line, '/');
        if (!base)
            continue;
        base++;
        for (unsigned n = 0; n < sizeof names / sizeof names[0]; n++) {
            size_t len = strlen(names[n]);
            /* libz.so.1 or libz-1.2.so, not libzstd for libz */
            if (strncmp(base, names[n], len) == 0 && (base[len] == '.' || base[len] == '-') &&
                !(seen & 1u << n)) {
                seen |= 1u << n;
                printf("map %s\n", names[n]);
            }
        }
    }
    fclose(f);
    printf("done\n");
    for (int i = 0; i < 16; i++)
        free(keep[i]);
    keep[0] = malloc(65536);
    return keep[0] ? 0 : 1;
}
