/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Makes one known block, has memtrace print its trace (symbolizing fills
 * memtrace's internal heap), prints its address as "@@ block ADDR", then
 * sleeps (for gcore). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *make(void)
{
    char *p = malloc(4242); /* SITE:known */
    memset(p, 3, 4242);
    return p;
}

char *volatile known;

int main(void)
{
    known = make();
    void (*print_trace)(const void *) =
        (void (*)(const void *))dlsym(RTLD_DEFAULT, "memtrace_print_trace");
    if (print_trace)
        print_trace(known);
    printf("@@ block %p\n", (void *)known);
    fflush(stdout);
    sleep(60);
    return 0;
}
