/* The libc names memtrace interposes when preloaded. Only forwarding lives
 * here; the logic is in tracer.c. C++ operator new/delete, strdup and the
 * rest of libc reach these through the PLT. */
#include "common.h"
#include "modules.h"
#include "threads.h"
#include "tracer.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>

MT_EXPORT void *malloc(size_t size) { return mt_malloc(size); }
MT_EXPORT void free(void *ptr) { mt_free(ptr); }
MT_EXPORT void *calloc(size_t n, size_t size) { return mt_calloc(n, size); }
MT_EXPORT void *realloc(void *ptr, size_t size) { return mt_realloc(ptr, size); }
MT_EXPORT void *reallocarray(void *ptr, size_t n, size_t size) { return mt_reallocarray(ptr, n, size); }
MT_EXPORT int posix_memalign(void **out, size_t align, size_t size) { return mt_posix_memalign(out, align, size); }
MT_EXPORT void *aligned_alloc(size_t align, size_t size) { return mt_aligned_alloc(align, size); }
MT_EXPORT void *memalign(size_t align, size_t size) { return mt_memalign(align, size); }
MT_EXPORT void *valloc(size_t size) { return mt_valloc(size); }
MT_EXPORT void *pvalloc(size_t size) { return mt_pvalloc(size); }
MT_EXPORT size_t malloc_usable_size(void *ptr) { return mt_malloc_usable_size(ptr); }
MT_EXPORT int dlclose(void *handle) { return mt_dlclose(handle); }
MT_EXPORT int pthread_setname_np(pthread_t thread, const char *name) { return mt_pthread_setname(thread, name); }
/* Variadic as libc declares it; glibc's own reads four more words the same way. */
MT_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    return mt_prctl(option, a2, a3, a4, a5);
}
