/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What `memtrace run --check` finds with its guard pages
 * (tests/e2e/errs_guard.sh), one case per run, named by argv[1] (a size
 * after it for the reads past the end). Every block is on a guard page
 * under --check, right-aligned (its end at 16-byte alignment, before the
 * next guard page) or left-aligned (at its page's start), alternating:
 * block() asks again until it gets the placement its case needs. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile char sink;

/* A block of SIZE bytes that starts a page when LEFT (so that an access
 * before it faults), else one that does not. */
static __attribute__((noinline)) char *block(size_t size, int left)
{
    char *p = malloc(size); /* SITE:block */
    for (int tries = 0; tries < 3 && (((uintptr_t)p & 4095) == 0) != left; tries++)
        p = malloc(size); /* SITE:block_again */
    return p;
}

static __attribute__((noinline)) void read_at(char *p, long i)
{
    sink = p[i]; /* SITE:read */
}

static __attribute__((noinline)) void write_at(char *p, long i)
{
    p[i] = 'y'; /* SITE:write */
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (!strcmp(c, "align")) {
        /* Every size from 1 to 64, malloc and calloc: 16-aligned, as glibc's. */
        int bad = 0;
        for (size_t s = 1; s <= 64; s++) {
            char *m = malloc(s), *z = calloc(1, s);
            if ((uintptr_t)m % 16)
                printf("malloc(%zu) = %p: not 16-aligned\n", s, (void *)m), bad++;
            if ((uintptr_t)z % 16)
                printf("calloc(1, %zu) = %p: not 16-aligned\n", s, (void *)z), bad++;
        }
        printf("align: %d misaligned\n", bad);
        return bad != 0;
    }
    if (!strcmp(c, "underflow")) { /* a write N bytes before a left-aligned block */
        char *p = block(100, 1);
        write_at(p, -n);
        free(p);
    } else if (!strcmp(c, "underflow_right")) { /* the same, right-aligned: at the free */
        char *p = block(100, 0);
        p[-n] = 'y';
        free(p); /* SITE:free_underflow */
    } else if (!strcmp(c, "overread")) { /* the first byte after the padding */
        char *p = block((size_t)n, 0);
        read_at(p, (n + 15) / 16 * 16);
        free(p);
    } else if (!strcmp(c, "padding")) { /* a write into the padding: at the free */
        char *p = block((size_t)n, 0);
        p[n] = 'y';
        free(p); /* SITE:free_padding */
    } else if (!strcmp(c, "realloc")) { /* resized in its page, contents kept */
        for (int left = 0; left < 2; left++) {
            char *p = block(100, left);
            for (int i = 0; i < 100; i++)
                p[i] = (char)i;
            p = realloc(p, 200);
            for (int i = 0; i < 100; i++)
                if (p[i] != (char)i)
                    return printf("realloc: byte %d lost\n", i), 1;
            p = realloc(p, 40);
            for (int i = 0; i < 40; i++)
                if (p[i] != (char)i)
                    return printf("realloc: byte %d lost\n", i), 1;
            printf("realloc %s: %s\n", left ? "left" : "right",
                   ((uintptr_t)p & 4095) == 0 ? "page start" : ((uintptr_t)p + 48) % 4096 == 0 ? "page end" : "elsewhere");
            free(p);
        }
    } else if (!strcmp(c, "realloc_read")) { /* past the end after a realloc */
        char *p = realloc(block(100, 0), 200); /* SITE:realloc_read */
        read_at(p, 208);
    } else if (!strcmp(c, "realloc_write")) { /* into the padding after a realloc */
        char *p = realloc(block(100, 0), 40); /* SITE:realloc_write */
        p[40] = 'y';
        free(p); /* SITE:free_realloc */
    } else if (!strcmp(c, "free_inside")) {
        char *p = malloc(100); /* SITE:inside_block */
        char *volatile inside = p + 8;
        free(inside); /* SITE:free_inside */
    } else if (!strcmp(c, "uaf")) { /* for the core */
        char *volatile p = block(64, 0);
        free(p);
        write_at(p, 8);
    } else if (!strcmp(c, "strcpy")) { /* 11 bytes into 10, found at the free */
        char *volatile p = malloc(10); /* SITE:strcpy_block */
        strcpy(p, argc > 2 ? argv[2] : "0123456789");
        printf("block %p\n", (void *)p);
        fflush(stdout);
        free(p); /* SITE:strcpy_free */
    } else {
        return 2;
    }
    puts("errs_guard: went on");
    return 0;
}
