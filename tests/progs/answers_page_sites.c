/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sites that share their innermost frame, for the names memtrace view
 * gives them (tests/e2e/answers_page.sh): three callers of one wrapper
 * (1 x 1000, 2 x 2000, 3 x 3000 bytes), and one more caller of it, grow,
 * reached from three places (from_one's two lines, from_two; 700 bytes
 * each): three stacks, one name. Everything is live until caller_a's block
 * is freed just before exit. Another wrapper, ymalloc, has one caller,
 * yvia, which from_y1 and from_y2 call (500 and 300 bytes): their stacks
 * part only after two shared frames (peak 16,900 bytes; 15,900 leaked).
 * `answers_page_sites more`: caller_b makes a third block (+2000) and
 * extra one of 5000 (the diff's second run). */
#include <stdlib.h>
#include <string.h>

static void *keep[16];
static int nkeep;

__attribute__((noinline)) static void *xmalloc(size_t n)
{
    void *p = malloc(n); /* SITE:xmalloc */
    if (!p)
        abort();
    memset(p, 1, n);
    keep[nkeep++] = p;
    return p;
}

__attribute__((noinline)) static void *caller_a(void)
{
    return xmalloc(1000); /* SITE:caller_a */
}

__attribute__((noinline)) static void caller_b(int n)
{
    for (int i = 0; i < n; i++)
        xmalloc(2000); /* SITE:caller_b */
}

__attribute__((noinline)) static void caller_c(void)
{
    for (int i = 0; i < 3; i++)
        xmalloc(3000); /* SITE:caller_c */
}

__attribute__((noinline)) static void grow(void)
{
    xmalloc(700); /* SITE:grow */
}

__attribute__((noinline)) static void from_one(void)
{
    grow(); /* SITE:from_one */
    grow();
}

__attribute__((noinline)) static void from_two(void)
{
    grow(); /* SITE:from_two */
}

__attribute__((noinline)) static void extra(void)
{
    xmalloc(5000); /* SITE:extra */
}

__attribute__((noinline)) static void *ymalloc(size_t n)
{
    void *p = malloc(n); /* SITE:ymalloc */
    if (!p)
        abort();
    keep[nkeep++] = p;
    return p;
}

__attribute__((noinline)) static void yvia(size_t n)
{
    ymalloc(n); /* SITE:yvia */
}

__attribute__((noinline)) static void from_y1(void)
{
    yvia(500); /* SITE:from_y1 */
}

__attribute__((noinline)) static void from_y2(void)
{
    yvia(300); /* SITE:from_y2 */
}

__attribute__((noinline)) static void work(int more)
{
    caller_b(more ? 3 : 2); /* SITE:work_b */
    caller_c();             /* SITE:work_c */
}

int main(int argc, char **argv)
{
    int more = argc > 1 && strcmp(argv[1], "more") == 0;
    void *a = caller_a(); /* SITE:main_a */
    work(more);           /* SITE:main_work */
    from_one();
    from_two();
    from_y1();
    from_y2();
    if (more)
        extra();
    free(a);
    return 0;
}
