/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An allocator below memtrace (tests/e2e/allocators.sh, preloaded after
 * it): C23's free_sized and free_aligned_sized, which print the arguments
 * they get and free with glibc's free. memtrace passes a free that takes
 * arguments on to these, at once or when the block leaves its quarantine;
 * the arguments must be the program's, with the redzone added to the
 * size. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

static void (*real_free)(void *);

__attribute__((constructor)) static void init(void)
{
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

static void say(const char *what, size_t a, size_t b)
{
    char line[96];
    int n = snprintf(line, sizeof line, "next_args: %s %zu %zu\n", what, a, b);
    if (write(2, line, (size_t)n) < 0)
        return;
}

void free_sized(void *p, size_t size)
{
    say("free_sized", size, 0);
    real_free(p);
}

void free_aligned_sized(void *p, size_t align, size_t size)
{
    say("free_aligned_sized", align, size);
    real_free(p);
}
