/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Built with -O2: `return new T` ends in a jump to operator new, so the
 * function's frame is not on the stack; memtrace rebuilds it from the
 * DWARF call sites and marks it "(tail call)". A pool getter adds a second
 * tail call in front. */
#include <cstddef>

struct Node {
    long payload[606]; // 4848 bytes: a size of its own for the oracle
};

Node *g_node, *g_pooled;
void checkpoint();
Node *make_node();
Node *pool_take();

__attribute__((noinline, noclone)) void checkpoint()
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) Node *make_node()
{
    return new Node; // SITE:new_node
}

__attribute__((noinline, noclone)) Node *pool_take()
{
    return make_node(); // SITE:pool_take
}

int main()
{
    g_node = make_node();   // SITE:call_make
    g_pooled = pool_take(); // SITE:call_pool_take
    checkpoint();
    delete g_node;
    delete g_pooled;
    return 0;
}
