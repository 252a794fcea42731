/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A library whose constructor registers a fork prepare handler that
 * allocates. Its constructor runs before memtrace initialises, so its handler
 * runs after memtrace's prepare handler, with memtrace's locks held. */
#include <pthread.h>
#include <stdlib.h>

void *volatile atfork_lib_keep;

static void prepare(void)
{
    atfork_lib_keep = malloc(32);
    free(atfork_lib_keep);
}

__attribute__((constructor)) static void register_handler(void)
{
    pthread_atfork(prepare, NULL, NULL);
}
