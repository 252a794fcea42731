/* Metadata memory straight from the kernel. Every byte memtrace keeps for
 * itself comes through here, never from the allocator being traced. */
#ifndef MT_OS_H
#define MT_OS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Zeroed, readable and writable pages; NULL (never MAP_FAILED) on failure.
 * WHAT names the structure for the one-time "stopped recording" warning. */
void *mt_os_map(size_t size, const char *what);
/* Gives the pages of [P, P+SIZE) back to the kernel but keeps the range
 * mapped: a late reader finds zeros instead of a fault. */
void mt_os_retire(void *p, size_t size);
/* Address space only (PROT_NONE, not committed), for regions that grow in
 * place with mt_os_commit. NULL on failure. */
void *mt_os_reserve(size_t size, const char *what);
int mt_os_commit(void *p, size_t size, const char *what);

size_t mt_os_page_size(void);

/* CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call, no lock). */
static inline uint64_t mt_os_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Called once per failed request with the structure's name and errno. */
void mt_metadata_failed(const char *what, size_t size, int err);

#endif
