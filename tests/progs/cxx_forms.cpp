/* SPDX-License-Identifier: LGPL-2.1-or-later */
// Every standard form of operator new and delete, called from marked lines
// (tests/e2e/allocators.sh). Built three ways: on glibc, linked with
// jemalloc, and run with tcmalloc preloaded after memtrace. At checkpoint()
// every g_* block is live and frame #0 of its trace is its SITE line; the
// eight calls in a row get consecutive allocation numbers (each block is
// recorded once, not again by the malloc that libstdc++'s new calls). At
// checkpoint2() every block has been freed by one of the twelve delete forms.
// With the argument "overflow": a block of new[] and one of new written one
// byte past their end, found in their redzones by delete[] and delete.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <new>

struct alignas(64) Line {
    char bytes[64];
};
struct Plain {
    long words[13];
};

void *g_new, *g_new_nt, *g_new_al, *g_new_al_nt;
void *g_newa, *g_newa_nt, *g_newa_al, *g_newa_al_nt;
Plain *g_expr;
Line *g_expr_al;
Plain *g_expr_arr;
void *g_after_throw;
void *g_sized, *g_sized_al, *g_arr_sized, *g_arr_sized_al;

extern "C" __attribute__((noinline)) void checkpoint()
{
    __asm__ volatile("" ::: "memory");
}
extern "C" __attribute__((noinline)) void checkpoint2()
{
    __asm__ volatile("" ::: "memory");
}

static const std::align_val_t A64{64};

static int overflow()
{
    char *volatile arr = new char[10];
    arr[10] = 1;
    delete[] arr; // SITE:overflow_arr
    char *volatile one = static_cast<char *>(::operator new(12));
    one[12] = 1;
    ::operator delete(one); // SITE:overflow_one
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && std::strcmp(argv[1], "overflow") == 0)
        return overflow();
    g_new = ::operator new(301);                          // SITE:new
    g_new_nt = ::operator new(302, std::nothrow);         // SITE:new_nt
    g_new_al = ::operator new(303, A64);                  // SITE:new_al
    g_new_al_nt = ::operator new(304, A64, std::nothrow); // SITE:new_al_nt
    g_newa = ::operator new[](305);                       // SITE:newa
    g_newa_nt = ::operator new[](306, std::nothrow);      // SITE:newa_nt
    g_newa_al = ::operator new[](307, A64);               // SITE:newa_al
    g_newa_al_nt = ::operator new[](308, A64, std::nothrow); // SITE:newa_al_nt
    g_expr = new Plain();                                 // SITE:expr
    g_expr_al = new Line();                               // SITE:expr_al
    g_expr_arr = new Plain[3];                            // SITE:expr_arr
    g_sized = ::operator new(309);
    g_sized_al = ::operator new(310, A64);
    g_arr_sized = ::operator new[](311);
    g_arr_sized_al = ::operator new[](312, A64);
    bool threw = false;
    try {
        void *volatile huge = ::operator new(~(std::size_t)0 / 2); // SITE:huge
        ::operator delete(huge);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    void *none = ::operator new(~(std::size_t)0 / 2, std::nothrow);
    g_after_throw = ::operator new(313); // SITE:after_throw
    if (((std::size_t)g_new_al | (std::size_t)g_new_al_nt | (std::size_t)g_newa_al |
         (std::size_t)g_newa_al_nt | (std::size_t)g_expr_al) % 64 != 0)
        std::puts("cxx_forms: an aligned block is not aligned");
    std::printf("cxx_forms: bad_alloc %s, nothrow %s\n", threw ? "thrown" : "NOT thrown",
                none ? "NOT NULL" : "NULL");
    checkpoint();
    ::operator delete(g_new);                               // plain
    ::operator delete(g_new_nt, std::nothrow);              // nothrow
    ::operator delete(g_new_al, A64);                       // aligned
    ::operator delete(g_new_al_nt, A64, std::nothrow);      // aligned nothrow
    ::operator delete(g_sized, 309);                        // sized
    ::operator delete(g_sized_al, 310, A64);                // sized aligned
    ::operator delete[](g_newa);
    ::operator delete[](g_newa_nt, std::nothrow);
    ::operator delete[](g_newa_al, A64);
    ::operator delete[](g_newa_al_nt, A64, std::nothrow);
    ::operator delete[](g_arr_sized, 311);
    ::operator delete[](g_arr_sized_al, 312, A64);
    delete g_expr;
    delete g_expr_al;
    delete[] g_expr_arr;
    ::operator delete(g_after_throw);
    checkpoint2();
    std::puts("cxx_forms: done");
    return 0;
}
