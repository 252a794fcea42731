/* SPDX-License-Identifier: LGPL-2.1-or-later */
// C++ allocations: operator new inside a namespace, and new[]. The trace
// must show the demangled, qualified function names.
#include <cstdio>
#include <string>

namespace shapes {

struct Widget {
    char name[48];
};

__attribute__((noinline)) Widget *make_widget()
{
    return new Widget(); // SITE:new
}

template <typename T> struct Pool {
    __attribute__((noinline)) static T *make_many(int n)
    {
        return new T[n]; // SITE:new_array
    }
};

} // namespace shapes

shapes::Widget *g_new;
shapes::Widget *g_new_array;

extern "C" __attribute__((noinline)) void checkpoint()
{
    __asm__ volatile("" ::: "memory");
}

int main()
{
    g_new = shapes::make_widget();
    g_new_array = shapes::Pool<shapes::Widget>::make_many(3);
    checkpoint();
    delete g_new;
    delete[] g_new_array;
    std::puts("sites_cxx: done");
    return 0;
}
