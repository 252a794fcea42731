// SPDX-License-Identifier: LGPL-2.1-or-later
// The C++ program of the symbolization differential test
// (tests/e2e/symbolize_diff.sh), built by the script with g++ and clang++:
// operator new in a template inlined at every level, in a method never
// inlined, and malloc in the shared library of tests/progs/symdiff_lib.c,
// each block's stack printed with print_trace (found with dlsym).
#include <dlfcn.h>
#include <cstddef>
#include <cstdlib>

extern "C" char *symdiff_lib_alloc(std::size_t n);

namespace symdiff {

template <typename T> inline __attribute__((always_inline)) T *make_inlined()
{
    return new T[11]; // SITE:cxx_inlined
}

struct Maker {
    __attribute__((noinline)) long *make(std::size_t n);
};

long *Maker::make(std::size_t n)
{
    long *p = new long[n]; // SITE:cxx_method
    p[0] = 2;
    return p;
}

} // namespace symdiff

__attribute__((noinline)) static void run()
{
    char *a = symdiff::make_inlined<char>();
    symdiff::Maker m;
    long *b = m.make(3);
    char *c = symdiff_lib_alloc(33);
    auto print_trace = reinterpret_cast<void (*)(const void *)>(dlsym(RTLD_DEFAULT, "print_trace"));
    if (print_trace) {
        print_trace(a);
        print_trace(b);
        print_trace(c);
    }
    std::free(c);
    delete[] b;
    delete[] a;
}

int main()
{
    run();
    return 0;
}
