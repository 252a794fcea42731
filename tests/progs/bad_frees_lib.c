/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* For bad_frees.cpp's fork_window case: a library whose constructor runs
 * before memtrace initialises, so that its fork prepare handler runs after
 * memtrace's, in the window where allocations go untraced. The handler
 * allocates a block the program frees after the fork. */
#include <pthread.h>
#include <stdlib.h>

void *bad_frees_kept;

static void prepare(void)
{
    bad_frees_kept = malloc(32);
}

__attribute__((constructor)) static void register_handler(void)
{
    pthread_atfork(prepare, NULL, NULL);
}
