/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The heap-bug corpus (tests/e2e/errs_corpus.sh): one bug per case, chosen
 * by argv[1], built plainly (memtrace, default and --check) and with
 * -fsanitize=address (the oracle). Each case's bad access or bad call is
 * on the line marked SITE:CASE, its block allocated at SITE:CASE_alloc.
 *
 *   errs_corpus CASE
 *
 * "ok" is the correct program: every family used to its last byte;
 * "status_exit", "status_return", "status__exit" STATUS end with a
 * reported mismatched delete and then exit(STATUS), return STATUS from
 * main, _exit(STATUS). */
/* The bugs are the point. */
#pragma GCC diagnostic ignored "-Wuse-after-free"
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile char sink;

/* Out of the compiler's sight: a plain store or load at the marked line. */
__attribute__((noinline)) static char *opaque(char *p)
{
    __asm__ volatile("" : "+r"(p));
    return p;
}

struct Obj {
    char name[24];
};

static void *thread_overflow(void *)
{
    char *p = opaque((char *)malloc(20)); /* SITE:thread_overflow_alloc */
    p[20] = 'x';                          /* SITE:thread_overflow */
    free(p);
    return NULL;
}

static void *thread_uaf(void *)
{
    char *p = opaque((char *)malloc(40)); /* SITE:thread_uaf_alloc */
    free(p);
    p[3] = 'x'; /* SITE:thread_uaf */
    return NULL;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "ok";
    if (!strcmp(c, "ok")) {
        char *a = opaque((char *)malloc(100));
        memset(a, 1, 100);
        char *b = opaque((char *)calloc(10, 10));
        b[99] = 1;
        b = opaque((char *)realloc(b, 300));
        b[299] = 1;
        void *al = aligned_alloc(64, 128);
        memset(al, 1, 128);
        char *n = new char[10];
        n[9] = 1;
        delete[] n;
        Obj *o = new Obj;
        o->name[23] = 1;
        delete o;
        free(al);
        free(b);
        free(a);
        return 0;
    }
    if (!strcmp(c, "overflow1")) {
        char *p = opaque((char *)malloc(100)); /* SITE:overflow1_alloc */
        p[100] = 'x';                          /* SITE:overflow1 */
        free(p);
    } else if (!strcmp(c, "overflow40")) {
        char *p = opaque((char *)malloc(96)); /* SITE:overflow40_alloc */
        memset(p, 'x', 96 + 40);              /* SITE:overflow40 */
        free(p);
    } else if (!strcmp(c, "overflow_page")) {
        char *p = opaque((char *)malloc(128)); /* SITE:overflow_page_alloc */
        memset(p, 'x', 128 + 4096);            /* SITE:overflow_page */
        free(p);
    } else if (!strcmp(c, "strcpy11")) {
        char *p = opaque((char *)malloc(10)); /* SITE:strcpy11_alloc */
        strcpy(p, "0123456789");              /* SITE:strcpy11 */
        free(p);
    } else if (!strcmp(c, "underflow1")) {
        char *p = opaque((char *)malloc(100)); /* SITE:underflow1_alloc */
        p[-1] = 'x';                           /* SITE:underflow1 */
        free(p);
    } else if (!strcmp(c, "underflow7")) {
        char *p = opaque((char *)malloc(100)); /* SITE:underflow7_alloc */
        p[-7] = 'x';                           /* SITE:underflow7 */
        free(p);
    } else if (!strcmp(c, "read_past_end")) {
        char *p = opaque((char *)malloc(16)); /* SITE:read_past_end_alloc */
        sink = p[16];                         /* SITE:read_past_end */
        free(p);
    } else if (!strcmp(c, "uaf_read")) {
        char *p = opaque((char *)malloc(64)); /* SITE:uaf_read_alloc */
        free(p);
        sink = p[8]; /* SITE:uaf_read */
    } else if (!strcmp(c, "uaf_write")) {
        char *p = opaque((char *)malloc(64)); /* SITE:uaf_write_alloc */
        free(p);
        p[8] = 'x'; /* SITE:uaf_write */
    } else if (!strcmp(c, "double_free")) {
        char *p = opaque((char *)malloc(32)); /* SITE:double_free_alloc */
        free(p);
        free(opaque(p)); /* SITE:double_free */
    } else if (!strcmp(c, "realloc_freed")) {
        char *p = opaque((char *)malloc(32)); /* SITE:realloc_freed_alloc */
        free(p);
        p = opaque((char *)realloc(p, 64)); /* SITE:realloc_freed */
        free(p);
    } else if (!strcmp(c, "free_inside")) {
        char *p = opaque((char *)malloc(32)); /* SITE:free_inside_alloc */
        free(opaque(p + 8));                  /* SITE:free_inside */
    } else if (!strcmp(c, "malloc_delete")) {
        Obj *p = (Obj *)opaque((char *)malloc(sizeof(Obj))); /* SITE:malloc_delete_alloc */
        delete p;                                            /* SITE:malloc_delete */
    } else if (!strcmp(c, "new_free")) {
        Obj *p = new Obj; /* SITE:new_free_alloc */
        free(opaque((char *)p)); /* SITE:new_free */
    } else if (!strcmp(c, "newarr_delete")) {
        char *p = opaque(new char[40]); /* SITE:newarr_delete_alloc */
        delete p;                       /* SITE:newarr_delete */
    } else if (!strcmp(c, "new_deletearr")) {
        Obj *p = (Obj *)opaque((char *)new Obj); /* SITE:new_deletearr_alloc */
        delete[] p;                              /* SITE:new_deletearr */
    } else if (!strcmp(c, "calloc_overflow")) {
        char *p = opaque((char *)calloc(10, 10)); /* SITE:calloc_overflow_alloc */
        p[100] = 'x';                             /* SITE:calloc_overflow */
        free(p);
    } else if (!strcmp(c, "realloc_overflow")) {
        char *p = opaque((char *)malloc(10));
        p = opaque((char *)realloc(p, 48)); /* SITE:realloc_overflow_alloc */
        p[48] = 'x';                        /* SITE:realloc_overflow */
        free(p);
    } else if (!strcmp(c, "aligned_overflow")) {
        char *p = opaque((char *)aligned_alloc(64, 64)); /* SITE:aligned_overflow_alloc */
        p[64] = 'x';                                     /* SITE:aligned_overflow */
        free(p);
    } else if (!strcmp(c, "memalign_overflow")) {
        void *v = NULL;
        if (posix_memalign(&v, 32, 32)) /* SITE:memalign_overflow_alloc */
            return 3;
        char *p = opaque((char *)v);
        p[32] = 'x'; /* SITE:memalign_overflow */
        free(p);
    } else if (!strcmp(c, "cxx_overflow")) {
        char *p = opaque(new char[32]); /* SITE:cxx_overflow_alloc */
        p[32] = 'x';                    /* SITE:cxx_overflow */
        delete[] p;
    } else if (!strcmp(c, "cxx_obj_overflow")) {
        Obj *o = new Obj; /* SITE:cxx_obj_overflow_alloc */
        opaque(o->name)[24] = 'x'; /* SITE:cxx_obj_overflow */
        delete o;
    } else if (!strcmp(c, "thread_overflow")) {
        pthread_t t;
        pthread_create(&t, NULL, thread_overflow, NULL);
        pthread_join(t, NULL);
    } else if (!strcmp(c, "thread_uaf")) {
        pthread_t t;
        pthread_create(&t, NULL, thread_uaf, NULL);
        pthread_join(t, NULL);
    } else if (!strncmp(c, "status_", 7)) {
        /* A reported bug, then the program's own status argv[2] by
         * status_exit (exit), status_return or status__exit (_exit). */
        int st = argc > 2 ? atoi(argv[2]) : 0;
        Obj *p = (Obj *)opaque((char *)malloc(sizeof(Obj)));
        delete p;
        if (!strcmp(c, "status_exit"))
            exit(st);
        if (!strcmp(c, "status__exit"))
            _exit(st);
        return st;
    } else {
        fprintf(stderr, "errs_corpus: unknown case %s\n", c);
        return 2;
    }
    return 0;
}
