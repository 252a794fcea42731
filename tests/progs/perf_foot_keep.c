/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* perf_foot_keep: which file pages memtrace's start-up leaves mapped
 * (tests/e2e/perf_foot_pages.sh). The suite builds this file twice: with
 * -DPERF_FOOT_KEEP_LIB -shared -llzma as libperf_keep.so, whose
 * constructor reads the byte at 512 KiB into its read-only data
 * (perf_keep_data, 1 MiB) and notes which pages of liblzma's code are
 * mapped (liblzma is then the program's too: its DT_NEEDED); and as the
 * program, linked with it. At main's start, before any allocation or
 * stdio, the program looks at /proc/self/pagemap and prints:
 *   "kept 1" if that page of libperf_keep.so is mapped, "kept 0" if not
 *   ("kept -" without the library);
 *   "lzma K N": of the N pages of liblzma's code mapped when the library's
 *   constructor ran, K still are ("lzma - -" without it);
 *   "own PERMS OFFSET" (hex) for each mapped file page (not a private
 *   copy) of the non-writable mappings whose file name starts with NAME,
 *   by its offset in the file.
 *
 *   perf_foot_keep NAME
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_FILE (UINT64_C(1) << 61)
#define LZMA_MAX 4096 /* pages of liblzma's code looked at */

static uint64_t entry(int pm, uintptr_t a)
{
    uint64_t e = 0;
    if (pread(pm, &e, sizeof e, (off_t)(a / 4096 * sizeof e)) != sizeof e)
        return 0;
    return e;
}

#ifdef PERF_FOOT_KEEP_LIB
#include <link.h>

#define KEEP_AT (512 * 1024)

__attribute__((aligned(65536))) const unsigned char perf_keep_data[1 << 20] = { 1 };
volatile unsigned char perf_keep_seen;
/* liblzma's code at the constructor: its first page's address, its
 * length in pages, and which were mapped */
uintptr_t perf_keep_lzma_lo;
size_t perf_keep_lzma_pages;
unsigned char perf_keep_lzma_mapped[LZMA_MAX];

static int find_lzma(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *base = strrchr(info->dlpi_name ? info->dlpi_name : "", '/');
    if (!base || strncmp(base + 1, "liblzma.so", 10) != 0)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
            uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz + 4095) & ~(uintptr_t)4095;
            perf_keep_lzma_lo = lo;
            perf_keep_lzma_pages = (hi - lo) / 4096 < LZMA_MAX ? (hi - lo) / 4096 : LZMA_MAX;
        }
    }
    return 1;
}

__attribute__((constructor)) static void keep_touch(void)
{
    /* through volatile: the constant array's byte would be folded */
    perf_keep_seen = *(const volatile unsigned char *)&perf_keep_data[KEEP_AT];
    int pm = open("/proc/self/pagemap", O_RDONLY);
    dl_iterate_phdr(find_lzma, NULL);
    for (size_t i = 0; pm >= 0 && i < perf_keep_lzma_pages; i++)
        perf_keep_lzma_mapped[i] = (entry(pm, perf_keep_lzma_lo + i * 4096) & PM_PRESENT) != 0;
    if (pm >= 0)
        close(pm);
}

#else

/* The library's, weak: this file also builds alone (tests/tests.mk). */
extern const unsigned char perf_keep_data[] __attribute__((weak));
extern uintptr_t perf_keep_lzma_lo __attribute__((weak));
extern size_t perf_keep_lzma_pages __attribute__((weak));
extern unsigned char perf_keep_lzma_mapped[] __attribute__((weak));

static char maps[1 << 20], out[1 << 16];
static size_t out_len;

static void say(const char *line)
{
    size_t n = strlen(line);
    if (out_len + n <= sizeof out) {
        memcpy(out + out_len, line, n);
        out_len += n;
    }
}

int main(int argc, char **argv)
{
    int pm = open("/proc/self/pagemap", O_RDONLY);
    int mf = open("/proc/self/maps", O_RDONLY);
    if (argc != 2 || pm < 0 || mf < 0)
        return 2;
    char line[256];
    if (perf_keep_data)
        snprintf(line, sizeof line, "kept %d\n",
                 (entry(pm, (uintptr_t)perf_keep_data + 512 * 1024) & PM_PRESENT) != 0);
    else
        snprintf(line, sizeof line, "kept -\n");
    say(line);
    if (&perf_keep_lzma_pages) {
        size_t k = 0, n = 0;
        for (size_t i = 0; i < perf_keep_lzma_pages; i++)
            if (perf_keep_lzma_mapped[i]) {
                n++;
                k += (entry(pm, perf_keep_lzma_lo + i * 4096) & PM_PRESENT) != 0;
            }
        snprintf(line, sizeof line, "lzma %zu %zu\n", k, n);
    } else
        snprintf(line, sizeof line, "lzma - -\n");
    say(line);

    size_t len = 0;
    ssize_t got;
    while (len < sizeof maps - 1 && (got = read(mf, maps + len, sizeof maps - 1 - len)) > 0)
        len += (size_t)got;
    maps[len] = 0;
    for (char *l = maps, *next; *l; l = next) {
        next = strchr(l, '\n');
        next = next ? next + 1 : l + strlen(l);
        unsigned long lo, hi, off;
        char perms[8];
        int at = 0;
        if (sscanf(l, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &at) != 4 || !at ||
            perms[1] == 'w')
            continue;
        const char *path = l + at, *end = strchr(path, '\n');
        const char *base = path;
        for (const char *p = path; p < (end ? end : path + strlen(path)); p++)
            if (*p == '/')
                base = p + 1;
        if (strncmp(base, argv[1], strlen(argv[1])) != 0)
            continue;
        for (unsigned long a = lo; a < hi; a += 4096) {
            uint64_t e = entry(pm, a);
            if ((e & PM_PRESENT) && (e & PM_FILE)) {
                snprintf(line, sizeof line, "own %s %lx\n", perms, off + (a - lo));
                say(line);
            }
        }
    }
    close(mf);
    close(pm);
    return write(1, out, out_len) == (ssize_t)out_len ? 0 : 1;
}

#endif
