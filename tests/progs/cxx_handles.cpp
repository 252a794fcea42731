/* SPDX-License-Identifier: LGPL-2.1-or-later */
// C++ handles for the gdb helper's tests (tests/e2e/gdb_helper.sh): stopped
// in hold()'s frame, `memtrace v` on each std::vector, std::string,
// std::unique_ptr and std::shared_ptr must answer for the heap block inside
// it (a short string has none: its characters are inside the object); a
// struct with two heap pointers lists them, one with a single heap pointer
// is asked about through it. Blocks are made at lines marked "SITE:<name>".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

struct Node {
    int *data;
    char *name;
    Node *next;
    int count;
};

struct Holder {
    long *only;
    int count;
};

__attribute__((noinline)) int checkpoint(int n)
{
    __asm__ volatile("" ::: "memory");
    return n + 1;
}

__attribute__((noinline)) static int hold()
{
    std::vector<int> v(40, 7);                                     // SITE:ch_vector
    std::string s(100, 'x');                                       // SITE:ch_string
    std::string small("tiny");
    std::unique_ptr<double[]> u(new double[16]());                 // SITE:ch_unique
    std::shared_ptr<long> made = std::make_shared<long>(42);       // SITE:ch_make_shared
    std::shared_ptr<long> owned(new long(43));                     // SITE:ch_shared_new
    const std::vector<int> &ref = v;
    std::vector<int> empty;
    std::unique_ptr<int> none;
    Node node = {new int[3], strdup("node"), nullptr, 3};
    Holder holder = {new long[5], 5};                              // SITE:ch_holder
    int n = checkpoint(int(ref.size() + s.size() + small.size() + u[0] + *made + *owned + empty.size()
                           + (none ? 1 : 0) + node.count + holder.count));
    delete[] node.data;
    free(node.name);
    delete[] holder.only;
    return n;
}

int main()
{
    std::printf("cxx handles: %d\n", hold());
    return 0;
}
