/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A gconv module for tests/progs/gconv_unload.c: it allocates from its
 * gconv_init, so memtrace unwinds through it; glibc loads it for iconv_open
 * and unloads it later with its own internal dlclose, which memtrace does
 * not see. Built twice: MYA.so with -DBIG (a 1 MiB .bss, so that its mapping
 * spans the place the small MYB.so is loaded at afterwards) and MYB.so. */
#include <gconv.h>
#include <stdlib.h>

#ifdef BIG
char big_bss[1 << 20];
#endif

void *volatile kept;

__attribute__((noinline)) static void init_inner(void)
{
    kept = malloc(24);
}

int gconv_init(struct __gconv_step *step)
{
    step->__min_needed_from = step->__max_needed_from = 1;
    step->__min_needed_to = step->__max_needed_to = 4;
    step->__stateful = 0;
    init_inner();
    return __GCONV_OK;
}

void gconv_end(struct __gconv_step *step)
{
    (void)step;
    free(kept);
}

int gconv(struct __gconv_step *step, struct __gconv_step_data *data, const unsigned char **inbuf,
          const unsigned char *inend, unsigned char **outbufstart, size_t *irreversible,
          int do_flush, int consume_incomplete)
{
    (void)step, (void)data, (void)inbuf, (void)inend, (void)outbufstart, (void)irreversible;
    (void)do_flush, (void)consume_incomplete;
    return __GCONV_EMPTY_INPUT;
}
