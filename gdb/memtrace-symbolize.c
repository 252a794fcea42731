/* memtrace-symbolize: the library's own symbolizer (src/symbolize.c) as a
 * program, for gdb/memtrace.py, which reads stacks out of a stopped process
 * or a core file and must print them exactly as print_trace does, inlined
 * frames and pc - 1 included.
 *
 *   memtrace-symbolize --pid PID            modules from /proc/PID/maps
 *   memtrace-symbolize --core CORE [--exe EXE]   modules from the core file
 *
 * Reads one stack a line on standard input (return addresses in hex,
 * innermost first, separated by spaces) and answers each with its frame
 * lines ("  #N ...") and a line "@@", flushed, so a caller can keep one
 * process for many questions. Exits at end of input; 2 on a usage error or
 * if the modules cannot be read (with one "memtrace-symbolize:" line). */
#include "../src/report.h"
#include "../src/symbolize.h"
#include "../src/stack_store.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *debuginfo_path;

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static const Dwfl_Callbacks core_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "memtrace-symbolize: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    exit(2);
}

static Dwfl *report_pid(pid_t pid)
{
    Dwfl *dwfl = dwfl_begin(&proc_callbacks);
    if (!dwfl)
        die("libdwfl", dwfl_errmsg(-1));
    dwfl_report_begin(dwfl);
    int rc = dwfl_linux_proc_report(dwfl, pid);
    if (dwfl_report_end(dwfl, NULL, NULL) != 0 || rc != 0)
        die("cannot read the modules of the process", rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
    return dwfl;
}

static Dwfl *report_core(const char *core, const char *exe)
{
    elf_version(EV_CURRENT);
    int fd = open(core, O_RDONLY);
    if (fd < 0)
        die("cannot open the core file", core);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        die("not an ELF core file", core);
    Dwfl *dwfl = dwfl_begin(&core_callbacks);
    if (!dwfl)
        die("libdwfl", dwfl_errmsg(-1));
    dwfl_report_begin(dwfl);
    int n = dwfl_core_file_report(dwfl, elf, exe);
    if (dwfl_report_end(dwfl, NULL, NULL) != 0 || n < 0)
        die("cannot read the modules of the core file", dwfl_errmsg(-1));
    return dwfl; /* the core stays open and mapped for the life of the process */
}

int main(int argc, char **argv)
{
    const char *core = NULL, *exe = NULL;
    long pid = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc)
            pid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--core") == 0 && i + 1 < argc)
            core = argv[++i];
        else if (strcmp(argv[i], "--exe") == 0 && i + 1 < argc)
            exe = argv[++i];
        else
            die("usage: memtrace-symbolize --pid PID | --core CORE [--exe EXE]", NULL);
    }
    if ((pid > 0) == (core != NULL))
        die("usage: memtrace-symbolize --pid PID | --core CORE [--exe EXE]", NULL);
    Dwfl *dwfl = core ? report_core(core, exe) : report_pid((pid_t)pid);

    char *line = NULL;
    size_t cap = 0;
    mt_out out;
    mt_out_init(&out, 1);
    while (getline(&line, &cap, stdin) >= 0) {
        uintptr_t frames[MT_MAX_DEPTH];
        unsigned depth = 0;
        char *p = line, *end;
        while (depth < MT_MAX_DEPTH) {
            unsigned long v = strtoul(p, &end, 16);
            if (end == p)
                break;
            frames[depth++] = v;
            p = end;
        }
        mt_sym_print_stack(dwfl, false, frames, depth, &out);
        mt_out_printf(&out, "@@\n");
        mt_out_flush(&out);
    }
    free(line);
    dwfl_end(dwfl);
    return 0;
}
