/* memtrace-symbolize: the library's own symbolizer and formatter
 * (src/symbolize/symbolize.c, src/report/format.c) as a program, for gdb/memtrace.py, which
 * reads memtrace's tables out of a stopped process or a core file and must
 * answer exactly as print_trace does: same frames (inlined ones, pc - 1),
 * same wording, written by the same code.
 *
 *   memtrace-symbolize --pid PID [--mem FD]  modules from /proc/PID/maps;
 *                      memory (leaks, refs) from FD, /proc/PID/mem opened
 *                      by gdb, which traces the process
 *   memtrace-symbolize --core CORE [--exe EXE]   modules and memory from
 *                      the core file
 *
 * Reads requests on standard input and answers each with its text and then
 * one line: a NUL byte and "@@" ("@@ error" when the answer is an error for
 * the gdb command: a null pointer, an address nothing is known about),
 * flushed, so a caller can keep one process for many questions. No answer
 * text holds a NUL byte (thread names may hold "\n@@"). Numbers are
 * hexadecimal; a thread NAME is its bytes in hexadecimal, "-" for none.
 *
 *   R R R ...          a stack (return addresses, innermost first): its
 *                      frame lines, "  #N ..."
 *   stack R R ...      a block's recorded stack as an answer shows it (no
 *                      address: "(no stack was recorded for this block)")
 *   answer ADDR [HISTORY]
 *                      print_trace's answer about ADDR, showing at most
 *                      HISTORY (default 3, ffffffff: all) freed records
 *                      of a live block (mt_answer.history), from these lines:
 *   live PTR SIZE SEQ THREAD NAME UNLOCKED
 *                      the live block holding ADDR, then its stack line
 *   lookup UNLOCKED    instead of "live": no live block holds ADDR
 *   freed PTR SIZE ALLOC_SEQ FREE_SEQ FREE_THREAD FREE_NAME ALLOC_THREAD ALLOC_NAME
 *                      a freed block that covered ADDR (newest first), then
 *                      two stack lines: where it was freed, where allocated
 *   below PTR SIZE SEQ THREAD NAME
 *   above PTR SIZE SEQ THREAD NAME
 *                      after the freed lines, when no live block holds ADDR:
 *                      the live block with the greatest start below ADDR,
 *                      the one with the least start above it (each line
 *                      optional, at any distance), then its stack line
 *   near-freed PTR SIZE ALLOC_SEQ FREE_SEQ FREE_THREAD FREE_NAME ALLOC_THREAD ALLOC_NAME
 *                      after those: a freed block near ADDR (newest first,
 *                      see mt_answer_near_freed), then its two stack lines
 *   stack R R ...      (inside an answer) a stack line
 *   end                ends the answer
 *
 *   recording ON EVER_OFF SEQ SEC
 *                      the line that says since when memtrace records
 *                      (mt_fmt_recording; nothing when EVER_OFF is 0)
 *   pprof PATH [MAIN]  writes the in-use profile in pprof's format to PATH
 *                      (hex bytes of the path; created 0600, never through a
 *                      symbolic link; MAIN: an address in the main
 *                      executable, whose Mapping goes first), from these
 *                      lines, one per group of
 *                      live blocks:
 *   sample THREAD NAME BYTES BLOCKS R R ...
 *                      the blocks of one thread and allocation stack (R:
 *                      return addresses, innermost first; none: no stack)
 *   end                ends the request; the answer is empty, or one
 *                      "memtrace: ..." line, an error, when not written
 *
 *   near-bounds        answers "BYTES MAX": the bound of "near"
 *                      (MT_NEAR_BYTES) and the freed blocks near an address
 *                      an answer shows at most (MT_NEAR_FREED_MAX), so
 *                      that the helper picks what the formatter shows
 *
 *   leaks N PID        `memtrace leaks N` (N 0: every site): the leak
 *                      scan and report (src/leak/leak_report.c), then
 *   refs ADDR PID      `memtrace refs`: every place holding a pointer into
 *                      the live block holding ADDR; both followed by:
 *   layout ENTRY_SIZE PTR SIZE STACK   the live entry's size and fields
 *   stacks CHUNKS MAX_CHUNKS CHUNK_BITS FRAMES_OFFSET DEPTH_MASK PRESENT_BIT
 *                      the stack store (the descriptor's stack_* words)
 *   shard BASE COUNT LOCKED   a shard's COUNT slots at BASE (one line each)
 *   self ADDR          an address in memtrace's library (no root)
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
#include "report/format.h"
#include "report/pprof.h"
#include "store/stack_store.h"
#include "symbolize/symbolize.h"
#include "target_leaks.h"

#define MT_NAME_MAX 1024 /* bytes of a thread name, with its NUL */

#include <elfutils/libdwfl.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static void malformed(const char *line)
{
    fprintf(stderr, "memtrace-symbolize: malformed request: %.200s", line);
    exit(3);
}

struct stack {
    uintptr_t frames[MT_MAX_DEPTH];
    unsigned depth;
};

/* Return addresses in hex, separated by spaces, from P. */
static void parse_frames(const char *p, struct stack *st)
{
    char *end;
    st->depth = 0;
    while (st->depth < MT_MAX_DEPTH) {
        unsigned long v = strtoul(p, &end, 16);
        if (end == p)
            break;
        st->frames[st->depth++] = v;
        p = end;
    }
}

/* N hex numbers from *P, advancing it; false if there are fewer. */
static bool parse_numbers(const char **p, uint64_t *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        char *end;
        v[i] = strtoull(*p, &end, 16);
        if (end == *p)
            return false;
        *p = end;
    }
    return true;
}

/* A thread's name from *P ("-", or its bytes in hex) into NAME; NULL for
 * none. */
static const char *parse_name(const char **p, char name[MT_NAME_MAX])
{
    while (**p == ' ')
        (*p)++;
    if (**p == '-') {
        (*p)++;
        return NULL;
    }
    size_t n = 0;
    while (n + 1 < MT_NAME_MAX && isxdigit((unsigned char)(*p)[0]) &&
           isxdigit((unsigned char)(*p)[1])) {
        char hex[3] = { (*p)[0], (*p)[1], 0 };
        name[n++] = (char)strtoul(hex, NULL, 16);
        *p += 2;
    }
    while (isxdigit((unsigned char)**p))
        (*p)++;
    name[n] = '\0';
    return name;
}

/* mt_stack_writer for the target: CTX is its symbolizer (mt_sym_state). */
static void put_stack(void *ctx, mt_out *out, const uintptr_t *frames, unsigned depth)
{
    mt_fmt_stack(out, ctx, false, frames, depth);
}

/* Reads the next line, which must be a stack line, into ST. */
static void read_stack(char **line, size_t *cap, struct stack *st)
{
    if (getline(line, cap, stdin) < 0 || strncmp(*line, "stack", 5) != 0)
        malformed(*line ? *line : "");
    parse_frames(*line + 5, st);
}

/* The fields of a "freed" or "near-freed" line after its keyword, P, and
 * its two stack lines, into *R (whose stacks point into S1 and S2). */
static void read_freed(const char *p, char **line, size_t *cap, struct stack *s1,
                       struct stack *s2, char name1[MT_NAME_MAX], char name2[MT_NAME_MAX],
                       mt_fmt_freed *r)
{
    uint64_t v[6];
    if (!parse_numbers(&p, v, 5))
        malformed(*line);
    const char *free_name = parse_name(&p, name1);
    if (!parse_numbers(&p, v + 5, 1))
        malformed(*line);
    const char *alloc_name = parse_name(&p, name2);
    read_stack(line, cap, s1);
    read_stack(line, cap, s2);
    *r = (mt_fmt_freed){
        .ptr = v[0], .size = v[1], .alloc_seq = v[2], .free_seq = v[3],
        .free_thread = { (uint32_t)v[4], free_name },
        .alloc_thread = { (uint32_t)v[5], alloc_name },
        .free_stack = { s1->frames, s1->depth },
        .alloc_stack = { s2->frames, s2->depth },
    };
}

/* The fields of a "below" or "above" line after its keyword, P, and its
 * stack line, into *E (whose stack points into S). */
static void read_near_live(const char *p, char **line, size_t *cap, struct stack *s,
                           char name[MT_NAME_MAX], mt_fmt_live *e)
{
    uint64_t v[4];
    if (!parse_numbers(&p, v, 4))
        malformed(*line);
    const char *thread_name = parse_name(&p, name);
    read_stack(line, cap, s);
    *e = (mt_fmt_live){
        .ptr = v[0], .size = v[1], .seq = v[2],
        .thread = { (uint32_t)v[3], thread_name },
        .stack = { s->frames, s->depth },
    };
}

/* One "answer" request, ADDR_TEXT after the keyword; reads up to "end". */
static void answer(mt_sym_state *sym, const char *addr_text, mt_out *out, char **line, size_t *cap)
{
    uint64_t addr;
    if (!parse_numbers(&addr_text, &addr, 1))
        malformed(*line);
    uint64_t history;
    bool history_given = parse_numbers(&addr_text, &history, 1);
    if (history_given && history > MT_HISTORY_ALL)
        malformed(*line);
    mt_answer a;
    bool asked = mt_answer_begin(&a, out, addr, put_stack, sym);
    if (history_given)
        a.history = (unsigned)history;
    bool known = asked;
    static struct stack s1, s2, s3, s4;
    static char below_name[MT_NAME_MAX], above_name[MT_NAME_MAX];
    mt_fmt_live below, above;
    bool has_below = false, has_above = false, near_given = false;
    for (;;) {
        if (getline(line, cap, stdin) < 0)
            malformed("(end of input inside an answer)\n");
        const char *p = *line;
        uint64_t v[8];
        char name1[MT_NAME_MAX], name2[MT_NAME_MAX];
        if (strncmp(p, "end", 3) == 0) {
            break;
        } else if (strncmp(p, "lookup ", 7) == 0) {
            p += 7;
            if (!parse_numbers(&p, v, 1))
                malformed(*line);
            if (asked)
                mt_answer_lookup(&a, NULL, v[0] != 0);
        } else if (strncmp(p, "live ", 5) == 0) {
            p += 5;
            if (!parse_numbers(&p, v, 4))
                malformed(*line);
            const char *name = parse_name(&p, name1);
            if (!parse_numbers(&p, v + 4, 1))
                malformed(*line);
            read_stack(line, cap, &s1);
            mt_fmt_live live = {
                .ptr = v[0], .size = v[1], .seq = v[2],
                .thread = { (uint32_t)v[3], name },
                .stack = { s1.frames, s1.depth },
            };
            if (asked)
                mt_answer_lookup(&a, &live, v[4] != 0);
        } else if (strncmp(p, "freed ", 6) == 0) {
            mt_fmt_freed r;
            read_freed(p + 6, line, cap, &s1, &s2, name1, name2, &r);
            if (asked)
                mt_answer_freed(&a, &r);
        } else if (strncmp(p, "below ", 6) == 0 && !near_given) {
            read_near_live(p + 6, line, cap, &s3, below_name, &below);
            has_below = true;
        } else if (strncmp(p, "above ", 6) == 0 && !near_given) {
            read_near_live(p + 6, line, cap, &s4, above_name, &above);
            has_above = true;
        } else if (strncmp(p, "near-freed ", 11) == 0) {
            mt_fmt_freed r;
            read_freed(p + 11, line, cap, &s1, &s2, name1, name2, &r);
            if (asked && !near_given)
                mt_answer_near(&a, has_below ? &below : NULL, has_above ? &above : NULL);
            near_given = true;
            if (asked)
                mt_answer_near_freed(&a, &r);
        } else {
            malformed(*line);
        }
    }
    if (asked && !near_given)
        mt_answer_near(&a, has_below ? &below : NULL, has_above ? &above : NULL);
    if (asked)
        known = mt_answer_end(&a);
    mt_out_write(out, known ? "\0@@\n" : "\0@@ error\n", known ? 4 : 10);
}

static void *heap_alloc(size_t size)
{
    return malloc(size);
}

/* One "pprof" request, the path's hex after the keyword in *LINE; reads
 * up to "end". */
static void write_pprof(mt_sym_state *sym, mt_out *out, char **line, size_t *cap)
{
    static const mt_pprof_heap heap = { heap_alloc, free };
    char path[4096];
    const char *p = *line + 6;
    size_t n = 0;
    while (n + 1 < sizeof path && isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1])) {
        char hex[3] = { p[0], p[1], 0 };
        path[n++] = (char)strtoul(hex, NULL, 16);
        p += 2;
    }
    path[n] = '\0';
    bool has = !isxdigit((unsigned char)*p); /* else too long */
    uint64_t main_addr = 0;
    if (has && !parse_numbers(&p, &main_addr, 1))
        main_addr = 0;
    mt_pprof *prof = mt_pprof_new(&heap, false);
    bool lost = prof == NULL;
    if (prof)
        mt_pprof_main(prof, (uintptr_t)main_addr);
    uint64_t key = 0;
    for (;;) {
        if (getline(line, cap, stdin) < 0)
            malformed("(end of input inside a pprof request)\n");
        if (strncmp(*line, "end", 3) == 0)
            break;
        if (strncmp(*line, "sample ", 7) != 0)
            malformed(*line);
        p = *line + 7;
        uint64_t v[3];
        char name[MT_NAME_MAX];
        if (!parse_numbers(&p, v, 1))
            malformed(*line);
        const char *thread_name = parse_name(&p, name);
        if (!parse_numbers(&p, v + 1, 2))
            malformed(*line);
        struct stack st;
        parse_frames(p, &st);
        mt_fmt_thread t = { (uint32_t)v[0], thread_name };
        mt_pprof_values val = { 0, 0, v[2], v[1] };
        if (!lost && !mt_pprof_add(prof, key++, st.frames, st.depth, t.number ? &t : NULL, &val))
            lost = true;
    }
    const char *failed = lost ? "out of memory" : NULL;
    int fd = -1;
    if (!has || !*path) {
        failed = has ? "no file name" : "the file name is too long";
    } else if (!failed) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            failed = errno == ELOOP ? "a symbolic link; not followed" : strerror(errno);
    }
    if (!failed) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        failed = mt_pprof_write(prof, sym, false, fd,
                                (int64_t)now.tv_sec * 1000000000 + now.tv_nsec, 0);
        if (close(fd) != 0 && !failed)
            failed = strerror(errno);
    }
    mt_pprof_free(prof);
    if (failed) {
        mt_out_printf(out, "memtrace: pprof: %.1024s not written (%s)\n", path,
                      failed);
        mt_out_write(out, "\0@@ error\n", 10);
    } else {
        mt_out_write(out, "\0@@\n", 4);
    }
}

int main(int argc, char **argv)
{
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
    mt_sym_state *sym = mt_sym_new(core ? report_core(core, exe) : report_pid((pid_t)pid));
    if (!sym)
        die("out of memory", NULL);
    if (!core)
        mt_target_mem_process((int)mem_fd, (int)pid);

    char *line = NULL;
    size_t cap = 0;
    mt_out out;
    mt_out_init(&out, 1);
    while (getline(&line, &cap, stdin) >= 0) {
        struct stack st;
        if (strncmp(line, "answer ", 7) == 0) {
            answer(sym, line + 7, &out, &line, &cap);
        } else if (strncmp(line, "leaks ", 6) == 0 || strncmp(line, "refs ", 5) == 0) {
            bool ok = mt_target_leaks_request(sym, line, stdin, &out);
            mt_out_write(&out, ok ? "\0@@\n" : "\0@@ error\n", ok ? 4 : 10);
        } else if (strncmp(line, "recording ", 10) == 0) {
            const char *p = line + 10;
            uint64_t v[4];
            if (!parse_numbers(&p, v, 4))
                malformed(line);
            mt_fmt_recording(&out, &(mt_fmt_recording_state){ v[0] != 0, v[1] != 0, v[2], v[3],
                                                                 (v[1] & 2) != 0, (v[1] & 4) != 0 });
            mt_out_write(&out, "\0@@\n", 4);
        } else if (strncmp(line, "pprof ", 6) == 0) {
            write_pprof(sym, &out, &line, &cap);
        } else if (strcmp(line, "near-bounds\n") == 0) {
            mt_out_printf(&out, "%x %x\n", MT_NEAR_BYTES, MT_NEAR_FREED_MAX);
            mt_out_write(&out, "\0@@\n", 4);
        } else if (strncmp(line, "stack", 5) == 0) {
            parse_frames(line + 5, &st);
            mt_fmt_block_stack(&out, put_stack, sym, &(mt_fmt_stack_ref){ st.frames, st.depth });
            mt_out_write(&out, "\0@@\n", 4);
        } else {
            parse_frames(line, &st);
            mt_fmt_stack(&out, sym, false, st.frames, st.depth);
            mt_out_write(&out, "\0@@\n", 4);
        }
        mt_out_flush(&out);
    }
    free(line);
    mt_sym_free(sym);
    return 0;
}
