/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sampled profiler's exit (tests/e2e/perf_profile_exit.sh): one block
 * large enough to be sampled, kept to the exit, then a wait of ARGV[1]
 * milliseconds (the program's own work); last, before main returns, it
 * prints whether libc's separate debug file (libc6-dbg's, under
 * /usr/lib/debug) is mapped into the process yet: whether symbolizing
 * its frames was paid during the run rather than at the exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *kept;

int main(int argc, char **argv)
{
    kept = malloc(4 << 20); /* SITE:kept */
    long ms = argc > 1 ? atol(argv[1]) : 0;
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int mapped = 0;
    while (maps && fgets(line, sizeof line, maps))
        mapped |= strstr(line, "/usr/lib/debug/") != NULL;
    if (maps)
        fclose(maps);
    printf("debug file mapped before exit: %s\n", mapped ? "yes" : "no");
    return kept == NULL;
}
