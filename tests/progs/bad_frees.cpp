/* SPDX-License-Identifier: LGPL-2.1-or-later */
// Bad frees (tests/e2e/bad_frees.sh): one per run, named by argv[1]; each
// is run natively too and must end the same way under memtrace. Sites are
// marked "SITE:name"; the script checks memtrace's report names them.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/wait.h>
#include <unistd.h>

extern "C" void *__libc_malloc(size_t);

__attribute__((noinline)) static char *make(size_t n)
{
    return static_cast<char *>(malloc(n)); // SITE:make
}

// free(P + 16) that glibc accepts: a chunk header faked inside the block
// (size 0x20, previous chunk in use) makes P + 16 look like a 16-byte
// chunk, so the program lives on and a loop can show once-per-site. The
// fake chunk goes to glibc's tcache; nothing here allocates that size again.
__attribute__((noinline)) static void free_inside(char *p)
{
    size_t header = 0x21;
    memcpy(p + 8, &header, sizeof header);
    free(p + 16); // SITE:inside_free
}

static void double_free()
{
    char *p = make(32); // SITE:double_alloc
    free(p); // SITE:first_free
    free(p); // SITE:second_free
}

// C++ allocations between the two frees (operator new calls malloc
// through memtrace untraced, inside the entry point that records the
// block): still a double free.
static void double_free_after_new()
{
    char *p = make(32);
    free(p);
    for (int i = 0; i < 4; i++)
        delete[] new char[100];
    free(p); // SITE:second_free_after_new
}

static void realloc_freed()
{
    char *p = make(32); // SITE:realloc_alloc
    free(p); // SITE:realloc_first_free
    char *q = static_cast<char *>(realloc(p, 32)); // SITE:realloc_freed
    std::printf("realloc returned %s\n", q ? "a block" : "NULL");
}

static void inside()
{
    char *p = make(32); // SITE:inside_alloc
    free(p + 8); // SITE:free_plus_8
}

static void inside_loop()
{
    for (int i = 0; i < 3; i++)
        free_inside(make(64));
    char *p = make(64);
    size_t header = 0x21;
    memcpy(p + 8, &header, sizeof header);
    free(p + 16); // SITE:inside_other
}

// A block the real allocator hands out in a fork window (the prepare
// handler of bad_frees_lib.c, after memtrace's), untraced, at the address
// of a block just freed: its free, in the parent and in the child, is no
// double free.
extern "C" void *bad_frees_kept;

static void fork_window()
{
    char *p = make(32);
    free(p);
    pid_t pid = fork();
    if (pid < 0)
        return;
    std::printf("%s: reused: %s\n", pid ? "parent" : "child", bad_frees_kept == p ? "yes" : "no");
    free(bad_frees_kept);
    if (pid == 0)
        std::fflush(stdout), _exit(0);
    int status;
    waitpid(pid, &status, 0);
}

// Blocks memtrace never saw (__libc_malloc is glibc's malloc under another
// name), freed while the freed history is full: each free reaches the
// bad-free check, which must stay cheap. Allocated first, so that none is
// at an address the history holds.
static void unknown_many(long n)
{
    char **blocks = static_cast<char **>(__libc_malloc(n * sizeof(char *)));
    for (long i = 0; i < n; i++)
        blocks[i] = static_cast<char *>(__libc_malloc(48));
    // Fill the freed history with traced frees meanwhile.
    for (long i = 0; i < 100000; i++)
        free(make(40));
    for (long i = 0; i < n; i++)
        free(blocks[i]);
    std::printf("freed %ld unknown blocks\n", n);
}

static void mismatch()
{
    for (int i = 0; i < 3; i++) {
        char *p = make(32); // SITE:malloc_deleted
        delete p;           // SITE:delete_malloc
    }
    char *a = new char[32]; // SITE:new_array
    free(a);                // SITE:free_new_array
    char *b = new char[32]; // SITE:new_array_2
    delete b;               // SITE:delete_new_array
    char *c = new char;     // SITE:new_one
    delete[] c;             // SITE:delete_array_new
    char *d = new char[32]; // SITE:new_array_realloc
    d = static_cast<char *>(realloc(d, 64)); // SITE:realloc_new_array
    free(d);
}

// The std::bad_alloc a failed operator new throws is allocated by
// libstdc++ inside memtrace's pass-through, so memtrace never records it;
// with glibc's tcache it lands where a block of its size was just freed,
// and catching it frees it: that free must not look like a double free.
static void bad_alloc_reuse()
{
    for (std::size_t n = 120; n <= 152; n += 8)
        free(make(n));
    try {
        void *q = ::operator new(~static_cast<std::size_t>(0) / 4);
        std::printf("allocated %p\n", q);
    } catch (const std::bad_alloc &) {
        std::puts("caught bad_alloc");
    }
}

// A daemon's descriptors: fd 2 closed (or closed already at start-up) and
// its data file DATA opened, which gets fd 2; with CLOSEFROM also every
// descriptor from 3 up closed and DATA put at 100 to 109, where memtrace's
// copy of stderr was. Then "data\n" and a free inside a block (which glibc
// accepts): memtrace's report must not go into DATA.
static int stderr_reused(const char *data, bool closefrom)
{
    close(2);
    int fd = open(data, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd != 2)
        return 3;
    if (closefrom) {
        for (int i = 3; i < 1024; i++)
            close(i);
        for (int i = 100; i < 110; i++)
            if (dup2(fd, i) != i)
                return 4;
    }
    if (write(fd, "data\n", 5) != 5)
        return 5;
    free_inside(make(64)); // SITE:reused_inside
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!std::strcmp(what, "double"))
        double_free();
    else if (!std::strcmp(what, "double_after_new"))
        double_free_after_new();
    else if (!std::strcmp(what, "realloc"))
        realloc_freed();
    else if (!std::strcmp(what, "inside"))
        inside();
    else if (!std::strcmp(what, "inside_loop"))
        inside_loop();
    else if (!std::strcmp(what, "fork_window"))
        fork_window();
    else if (!std::strcmp(what, "unknown_many"))
        unknown_many(argc > 2 ? std::atol(argv[2]) : 100000);
    else if (!std::strcmp(what, "mismatch"))
        mismatch();
    else if (!std::strcmp(what, "bad_alloc"))
        bad_alloc_reuse();
    else if (!std::strcmp(what, "stderr_reused") && argc > 2)
        return stderr_reused(argv[2], argc > 3 && !std::strcmp(argv[3], "closefrom"));
    else
        return 2;
    std::printf("done\n");
    return 0;
}
