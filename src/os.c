/* Metadata mappings. A failed mapping is reported once, on stderr, by the
 * caller's name; callers then stop recording and the program runs on. */
#include "os.h"

#include "common.h"
#include "report.h"

#include <sys/mman.h>
#include <unistd.h>

static int warned;

static void warn_failed(const char *what, size_t size)
{
    if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        return;
    mt_warn("could not map %zu bytes for the %s; recording of new blocks "
            "may stop, the program runs on", size, what);
}

void *mt_os_map(size_t size, const char *what)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        warn_failed(what, size);
        return NULL;
    }
    return p;
}

void mt_os_unmap(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

void *mt_os_reserve(size_t size, const char *what)
{
    void *p = mmap(NULL, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        warn_failed(what, size);
        return NULL;
    }
    return p;
}

int mt_os_commit(void *p, size_t size, const char *what)
{
    if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
        warn_failed(what, size);
        return -1;
    }
    return 0;
}

size_t mt_os_page_size(void)
{
    static size_t page;
    if (!page)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}
