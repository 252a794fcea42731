/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launcher_requests.h"
#include "core_check.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int elf_info_fail(const char *path, const char *why)
{
    fprintf(stderr, "memtrace: %s: %s\n", path, why);
    return 1;
}

static void print_type(unsigned type)
{
    static const char *const
        names[] = { [ET_REL] = "rel", [ET_EXEC] = "exec", [ET_DYN] = "dyn", [ET_CORE] = "core" };
    if (type < sizeof names / sizeof *names && names[type])
        printf("type %s\n", names[type]);
    else
        printf("type %u\n", type);
}

/* The program headers of ELF (RAW, SIZE bytes: the whole file), read as
 * far as the file holds them: an entry counts when its p_type is in the
 * file, as the kernel's loader would never see it but a reader of a cut
 * file does. Prints program-headers, pt-interp and interp. */
static void print_interp(Elf *elf, const GElf_Ehdr *eh, const char *raw, size_t size)
{
    uint64_t ent = eh->e_phentsize, need = eh->e_phoff + ent * eh->e_phnum;
    printf("program-headers %s\n", eh->e_phoff <= size && need <= size ? "whole" : "cut-short");
    if (ent < 4) {
        printf("pt-interp unknown\n");
        return;
    }
    size_t phsize = gelf_fsize(elf, ELF_T_PHDR, 1, EV_CURRENT);
    for (uint64_t i = 0; i < eh->e_phnum; i++) {
        uint64_t at = eh->e_phoff + i * ent;
        if (at > size || size - at < 4)
            break;
        GElf_Phdr ph = { 0 };
        Elf_Data src = { .d_buf = (void *)(raw + at),
                         .d_type = ELF_T_WORD,
                         .d_size = 4,
                         .d_version = EV_CURRENT };
        Elf_Data dst = { .d_buf = &ph.p_type,
                         .d_type = ELF_T_WORD,
                         .d_size = 4,
                         .d_version = EV_CURRENT };
        if (!gelf_xlatetom(elf, &dst, &src, eh->e_ident[EI_DATA]) || ph.p_type != PT_INTERP)
            continue;
        printf("pt-interp yes\n");
        /* The path, when the table is whole and the path's bytes are in the file. */
        if (ent < phsize || size - at < phsize || !gelf_getphdr(elf, (int)i, &ph) ||
            ph.p_offset > size || ph.p_filesz > size - ph.p_offset || ph.p_filesz == 0)
            return;
        const char *path = raw + ph.p_offset;
        printf("interp %.*s\n", (int)strnlen(path, ph.p_filesz), path);
        return;
    }
    printf("pt-interp no\n");
}

static int elf_info(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return elf_info_fail(path, strerror(errno));
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    size_t size = 0;
    const char *raw = elf ? elf_rawfile(elf, &size) : NULL;
    int rc = 0;
    if (!elf || elf_kind(elf) != ELF_K_ELF || !raw || !gelf_getehdr(elf, &eh)) {
        rc = elf_info_fail(path, elf && elf_kind(elf) != ELF_K_ELF
                                     ? "not an ELF file"
                                     : "not an ELF file (its header is cut short or damaged)");
    } else {
        unsigned native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
        printf("class %d\nbyte-order %s\nmachine %u\n", gelf_getclass(elf) == ELFCLASS32 ? 32 : 64,
               eh.e_ident[EI_DATA] == native ? "native" : "foreign", eh.e_machine);
        print_type(eh.e_type);
        print_interp(elf, &eh, raw, size);
    }
    elf_end(elf);
    close(fd);
    return rc;
}

/* The system calls a thread blocks in while it holds no lock of the
 * allocator's or the loader's: its own code is outside both, waiting. Each
 * by name, so that the numbers are this machine's (some are not on every
 * architecture: aarch64 has ppoll and pselect6, not poll and select). */
static const long wait_syscalls[] = {
    SYS_read,       SYS_nanosleep,       SYS_accept,        SYS_recvfrom,    SYS_recvmsg,
    SYS_wait4,      SYS_rt_sigtimedwait, SYS_rt_sigsuspend, SYS_futex,       SYS_clock_nanosleep,
    SYS_waitid,     SYS_pselect6,        SYS_ppoll,         SYS_epoll_pwait, SYS_accept4,
#ifdef SYS_poll
    SYS_poll,
#endif
#ifdef SYS_select
    SYS_select,
#endif
#ifdef SYS_pause
    SYS_pause,
#endif
#ifdef SYS_epoll_wait
    SYS_epoll_wait,
#endif
};

static int print_wait_syscalls(void)
{
    for (size_t i = 0; i < sizeof wait_syscalls / sizeof *wait_syscalls; i++)
        printf("%s%ld", i ? " " : "", wait_syscalls[i]);
    printf("\n");
    return 0;
}

int mt_launcher_request(int argc, char **argv)
{
    int rc = -1;
    if (argc == 3 && strcmp(argv[1], "--elf-info") == 0)
        rc = elf_info(argv[2]);
    else if ((argc == 3 || argc == 4) && strcmp(argv[1], "--core-check") == 0)
        rc = mt_core_check(argv[2], argc == 4 ? argv[3] : NULL);
    else if (argc == 2 && strcmp(argv[1], "--wait-syscalls") == 0)
        rc = print_wait_syscalls();
    if (rc >= 0 && fflush(stdout) != 0)
        rc = elf_info_fail("standard output", strerror(errno));
    return rc;
}
