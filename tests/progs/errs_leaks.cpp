/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Interior pointers that valgrind's default heuristics count as start
 * pointers (tests/e2e/errs_leaks.sh, valgrind as the oracle): each kept
 * only by a global that points inside its block.
 *
 *   errs_leaks CASE   (newarray, multi, length64, plain, all)
 *
 * newarray: new D[10] of a class with a destructor, held by the array's
 *   first element (8 bytes in, after new[]'s count);
 * multi: new C of class C : A, B, held by its B (a second base);
 * length64: a block whose first word is the length of the rest, held 8
 *   bytes in (sqlite's allocator does this);
 * plain: a malloc'ed block held 16 bytes in: possibly lost for both. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct D {
    long v = 1;
    ~D() { v = 0; }
};
struct A {
    virtual ~A() {}
    long a = 1;
};
struct B {
    virtual ~B() {}
    long b = 2;
};
struct C : A, B {
    long c = 3;
};

D *g_array;
B *g_base;
char *g_len64;
char *g_plain;

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "all";
    bool all = !strcmp(c, "all");
    if (all || !strcmp(c, "newarray"))
        g_array = new D[10]; /* 8 + 80 bytes, held at +8 */
    if (all || !strcmp(c, "multi"))
        g_base = new C; /* held at its B */
    if (all || !strcmp(c, "length64")) {
        char *p = (char *)malloc(8 + 56);
        uint64_t n = 56;
        memcpy(p, &n, 8);
        g_len64 = p + 8;
    }
    if (all || !strcmp(c, "plain")) {
        char *p = (char *)calloc(1, 48);
        g_plain = p + 16;
    }
    return 0;
}
