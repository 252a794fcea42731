// SPDX-License-Identifier: LGPL-2.1-or-later
// A program that replaces operator new and the unsized operator delete,
// counting its live blocks through malloc and free inside them. The
// compiler's sized deletes and the array forms reach them through the C++
// runtime's definitions. Prints "live N" after freeing all it allocated
// and exits 1 unless N is 0; a round that ends with blocks live says so.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

// The sized form is left out on purpose: the runtime's calls the unsized.
#pragma GCC diagnostic ignored "-Wsized-deallocation"

static long live;

void *operator new(std::size_t n)
{
    void *p = std::malloc(n ? n : 1);
    if (!p)
        throw std::bad_alloc();
    live++;
    return p;
}

void operator delete(void *p) noexcept
{
    if (!p)
        return;
    live--;
    std::free(p);
}

struct node {
    long value[5];
    node *next;
};

int main()
{
    for (int round = 0; round < 3000; round++) {
        node *head = nullptr;
        for (int i = 0; i < 10; i++) {
            node *n = new node(); // delete below is the sized form
            n->next = head;
            head = n;
        }
        while (head) {
            node *n = head->next;
            delete head;
            head = n;
        }
        int *a = new int[7];
        delete[] a;
        {
            std::vector<std::string> v;
            for (int i = 0; i < 4; i++)
                v.push_back(std::string(40 + i, 'x'));
        }
        if (live != 0)
            std::printf("round %d: live %ld\n", round, live);
    }
    std::printf("live %ld\n", live);
    return live == 0 ? 0 : 1;
}
