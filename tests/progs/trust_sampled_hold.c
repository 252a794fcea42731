/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* 4,000 blocks of 4 KiB held at once (16 MB at the peak), then freed:
 * under MEMTRACE_SAMPLE=65536 about one in sixteen is recorded
 * (tests/e2e/trust_sampled.sh). */
#include <stdlib.h>
#include <string.h>

int main(void)
{
    enum { N = 4000, SIZE = 4096 };
    static char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = malloc(SIZE); /* SITE:hold */
        memset(p[i], i, SIZE);
    }
    for (int i = 0; i < N; i++)
        free(p[i]);
    return 0;
}
