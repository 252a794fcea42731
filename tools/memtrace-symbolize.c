/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memtrace-symbolize: the library's own symbolizer and formatter
 * (src/symbolize/symbolize.c, src/report/format.c) as a program, with the
 * one reader of memtrace's tables out of process (tools/tables.c), for the
 * gdb helper (gdb/memtrace_gdb), which must answer from a stopped process
 * or a core file exactly as print_trace does: same frames (inlined ones,
 * pc - 1), same wording, written by the same code. The helper keeps what
 * needs gdb (expressions, threads and registers, the process or core) and
 * forwards the rest here.
 *
 *   memtrace-symbolize --pid PID [--mem FD]  modules from /proc/PID/maps;
 *                      memory (the tables, leaks) from FD, /proc/PID/mem opened
 *                      by gdb, which traces the process
 *   memtrace-symbolize --core CORE [--exe EXE]   modules and memory from
 *                      the core file
 *   memtrace-symbolize --text [FILE...]   `memtrace symbolize`: text written
 *                      with MEMTRACE_SYMBOLIZE=later back as `now` writes it
 *                      (tools/text_symbolize.c)
 *   memtrace-symbolize --elf-info FILE | --core-check CORE [EXE] |
 *                      --wait-syscalls   the launcher's and the helper's
 *                      questions, answered at once (tools/launcher_requests.h)
 *
 * Reads requests on standard input and answers each with its text and then
 * one line: a NUL byte and "@@" ("@@ error" when the answer is an error for
 * the gdb command: a null pointer, an address nothing is known about),
 * flushed, so a caller can keep one process for many questions. No answer
 * text holds a NUL byte (thread names may hold "\n@@"). Numbers are
 * hexadecimal; a thread NAME is its bytes in hexadecimal, "-" for none.
 *
 *   tables ADDR        reads memtrace_state at ADDR (the descriptor,
 *                      src/runtime/descriptor.h) and checks its layout
 *                      (tools/tables.c); answers the address of the
 *                      library's version string (0: none; gdb reads it: a
 *                      core leaves read-only data out). Every request below
 *                      reads the tables through it, from
 *                      what was read since: send it again once the target
 *                      ran or its memory was written. An error answer is
 *                      one "memtrace: ..." line (a damaged table: "memtrace:
 *                      memtrace_state looks corrupted (...)"), for every
 *                      request below too.
 *   describe ADDR HISTORY
 *                      print_trace's answer about ADDR (the live block
 *                      holding it, the freed blocks that covered it, the
 *                      blocks near it), showing at most HISTORY (ffffffff:
 *                      all) freed records of a live block (mt_answer.history),
 *                      then the recording line; an error when nothing is
 *                      known about ADDR or it is null
 *   live-block ADDR    "START SIZE" of the live block starting at or holding
 *                      ADDR, or nothing
 *   top N              the N call sites holding the most live bytes, then
 *                      the recording line
 *   stats              the totals, then the recording line
 *   tags FORMAT PID    the tag scopes' trees (text, json or dot) of process
 *                      PID (hex), by tags/tags_format.c (tools/table_tags.c)
 *   recording          the line that says since when memtrace records
 *                      (mt_fmt_recording; nothing when it was never off)
 *   pprof PATH [MAIN]  writes the in-use profile (the live blocks by
 *                      allocation stack and thread) in pprof's format to
 *                      PATH (hex bytes of the path; created 0600, never
 *                      through a symbolic link; MAIN: an address in the
 *                      main executable, whose Mapping goes first); answers
 *                      its summary line, or one "memtrace: pprof: ... not
 *                      written (...)" line, an error
 *
 *   check              `memtrace check`: every live block's redzone, every
 *                      quarantined block, glibc's chunk headers around
 *                      them (tools/heap_check.c); each damaged block in
 *                      the heap errors' report, then a summary line
 *
 *   last-error         `memtrace last-error`: the last error report the
 *                      library kept the facts of (tools/heap_check.c)
 *
 *   leaks N PID        `memtrace leaks N` (N 0: every site): the leak
 *                      scan and report (src/leak/leak_report.c), then
 *   refs ADDR PID      `memtrace refs`: every place holding a pointer into
 *                      the live block holding ADDR; both read the live
 *                      blocks from the tables
 *   where ADDR PID     what ADDR, in no heap block, is: a symbol's bytes,
 *                      a thread's stack frame or TLS, a mapping (one
 *                      line, tools/target_where.c); the three are
 *                      followed by:
 *   self ADDR          an address in memtrace's library (no root; default:
 *                      memtrace_state's)
 *   tcb SIZE           glibc's thread descriptor size
 *   thread TID NUMBER SP TP   a thread (gdb's NUMBER; TP: fs_base), then
 *   reg NAME VALUE     its registers, and
 *   frame LEVEL SP FUNCTION RET OUTER   its frames, innermost first
 *                      (FUNCTION, gdb's name, as a thread NAME is written;
 *                      RET the frame's pc as a return address and OUTER
 *                      its inlined frames up to its real one: the
 *                      symbolizer names row n - 1 - OUTER of RET when it
 *                      can; RET 0 or absent: FUNCTION)
 *   suppressions PATH  MEMTRACE_SUPPRESSIONS (hex, as a NAME)
 *   end                ends the request (tools/target_leaks.c reads it)
 *
 * Exits at end of input; 2 on a usage error or if the modules cannot be
 * read (with one "memtrace-symbolize:" line), 3 on a malformed request. */
#include "base/output.h"
#include "symbolize/symbolize.h"
#include "heap_check.h"
#include "launcher_requests.h"
#include "request.h"
#include "table_answers.h"
#include "tables.h"
#include "target_leaks.h"
#include "target_mem.h"
#include "text_symbolize.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *debuginfo_path;

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = mt_sym_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static const Dwfl_Callbacks core_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = mt_sym_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "memtrace-symbolize: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static Dwfl *report_pid(pid_t pid)
{
    Dwfl *dwfl = dwfl_begin(&proc_callbacks);
    if (!dwfl)
        die("libdwfl", dwfl_errmsg(-1));
    dwfl_report_begin(dwfl);
    int rc = 0;
    mt_sym_report_process(dwfl, pid, &rc);
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
    mt_target_mem_core(elf);
    return dwfl; /* the core stays open and mapped for the life of the process */
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--text") == 0)
        return mt_text_symbolize(argc - 2, argv + 2);
    int launcher_rc = mt_launcher_request(argc, argv);
    if (launcher_rc >= 0)
        return launcher_rc;
    const char *core = NULL, *exe = NULL;
    long pid = 0, mem_fd = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc)
            pid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--core") == 0 && i + 1 < argc)
            core = argv[++i];
        else if (strcmp(argv[i], "--mem") == 0 && i + 1 < argc)
            mem_fd = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--exe") == 0 && i + 1 < argc)
            exe = argv[++i];
        else
            die("usage: memtrace-symbolize --pid PID | --core CORE [--exe EXE]", NULL);
    }
    if ((pid > 0) == (core != NULL))
        die("usage: memtrace-symbolize --pid PID | --core CORE [--exe EXE]", NULL);
    /* MEMTRACE_DEBUG_DIR from gdb's environment, as the library reads it. */
    mt_sym_read_debug_dir();
    debuginfo_path = mt_sym_debuginfo_path();
    mt_sym_state *sym = mt_sym_new(core ? report_core(core, exe) : report_pid((pid_t)pid));
    if (!sym)
        die("out of memory", NULL);
    if (!core)
        mt_target_mem_process((int)mem_fd, (int)pid);

    static mt_tables tables;
    char *line = NULL;
    size_t cap = 0;
    mt_out out;
    mt_out_init(&out, 1);
    while (getline(&line, &cap, stdin) >= 0) {
        if (strncmp(line, "tables ", 7) == 0)
            mt_target_mem_changed(); /* the target ran, or gdb wrote to it */
        if (mt_table_request(&tables, sym, line, &out, mt_target_read, NULL)) {
            /* answered */
        } else if (strcmp(line, "check\n") == 0) {
            if (!tables.open)
                mt_request_malformed(line); /* "tables" comes first */
            mt_tables_clear_error(&tables);
            mt_heap_check_request(&tables, sym, &out);
        } else if (strcmp(line, "last-error\n") == 0) {
            if (!tables.open)
                mt_request_malformed(line); /* "tables" comes first */
            mt_tables_clear_error(&tables);
            mt_last_error_request(&tables, sym, &out);
        } else if (strncmp(line, "leaks ", 6) == 0 || strncmp(line, "refs ", 5) == 0 ||
                   strncmp(line, "where ", 6) == 0) {
            if (!tables.open)
                mt_request_malformed(line); /* "tables" comes first */
            bool ok = mt_target_leaks_request(sym, &tables, line, stdin, &out);
            mt_out_write(&out, ok ? "\0@@\n" : "\0@@ error\n", ok ? 4 : 10);
        } else {
            mt_request_malformed(line);
        }
        mt_out_flush(&out);
    }
    free(line);
    mt_sym_free(sym);
    return 0;
}
